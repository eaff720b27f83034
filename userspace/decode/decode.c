// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: inputs, the image section cache, and the segmented
 * (parallel) decode of PT traces into item lists.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <Zydis/Zydis.h>

#include "decode.h"
#include "step.h"

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		fprintf(stderr, "ipttool: out of memory\n");
		exit(2);
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "ipttool: out of memory\n");
		exit(2);
	}
	return p;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Parse a whole string as an unsigned number (0x... hex, else decimal). */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

void dec_input_init(struct dec_input *in)
{
	memset(in, 0, sizeof(*in));
	in->cpu.vendor = pcv_unknown;
}

void dec_input_warn(struct dec_input *in, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	in->warnings = xrealloc(in->warnings, (in->nr_warnings + 1) * sizeof(*in->warnings));
	in->warnings[in->nr_warnings++] = xstrdup(buf);
}

void dec_input_free(struct dec_input *in)
{
	size_t i;

	for (i = 0; i < in->nr_warnings; i++)
		free(in->warnings[i]);
	free(in->warnings);
	for (i = 0; i < in->nr_traces; i++)
		free(in->traces[i].file);
	for (i = 0; i < in->nr_images; i++) {
		free(in->images[i].file);
		free(in->images[i].elf);
		free(in->images[i].name);
		free(in->images[i].kallsyms);
	}
	for (i = 0; i < in->nr_fds; i++)
		close(in->fds[i]);
	free(in->fds);
	for (i = 0; i < in->nr_sched; i++) {
		free(in->sched[i].time);
		free(in->sched[i].pid);
	}
	free(in->sched);
	free(in->comms);
	free(in->traces);
	free(in->images);
	memset(in, 0, sizeof(*in));
}

/*
 * The name of thread @tid (> 0), else of process @pid's main thread, else
 * of any thread of @pid, from the sideband's comm records; NULL if none.
 */
const char *dec_input_comm(const struct dec_input *in, long pid, long tid)
{
	size_t i;

	for (i = 0; tid > 0 && i < in->nr_comms; i++)
		if (in->comms[i].tid == tid)
			return in->comms[i].comm;
	for (i = 0; pid > 0 && i < in->nr_comms; i++)
		if (in->comms[i].tid == pid)
			return in->comms[i].comm;
	for (i = 0; pid > 0 && i < in->nr_comms; i++)
		if (in->comms[i].pid == pid)
			return in->comms[i].comm;
	return NULL;
}

int dec_input_add_trace(struct dec_input *in, const char *file, int cpu)
{
	in->traces = xrealloc(in->traces, (in->nr_traces + 1) * sizeof(*in->traces));
	in->traces[in->nr_traces].file = xstrdup(file);
	in->traces[in->nr_traces].cpu = cpu;
	in->traces[in->nr_traces].data = NULL;
	in->traces[in->nr_traces].size = 0;
	in->traces[in->nr_traces].tid = -1;
	in->traces[in->nr_traces].pid = 0;
	in->nr_traces++;
	return 0;
}

static struct dec_image *add_image(struct dec_input *in, const char *file, uint64_t off,
				   uint64_t size, uint64_t vaddr)
{
	struct dec_image *im;

	in->images = xrealloc(in->images, (in->nr_images + 1) * sizeof(*in->images));
	im = &in->images[in->nr_images++];
	memset(im, 0, sizeof(*im));
	im->file = xstrdup(file);
	im->offset = off;
	im->size = size;
	im->vaddr = vaddr;
	im->name = xstrdup(base_name(file));
	im->until = UINT64_MAX;
	return im;
}

int dec_parse_cpu(const char *s, struct pt_cpu *cpu)
{
	unsigned int f, m, st = 0;
	char extra;
	int n = sscanf(s, "%u/%u/%u%c", &f, &m, &st, &extra);

	if (n != 2 && n != 3)
		return -1;
	if (f > 0xffff || m > 0xff || st > 0xff)
		return -1;
	memset(cpu, 0, sizeof(*cpu));
	cpu->vendor = pcv_intel;
	cpu->family = (uint16_t)f;
	cpu->model = (uint8_t)m;
	cpu->stepping = (uint8_t)st;
	return 0;
}

/* Split "FILE:NUM" at the last colon when NUM is a number. */
static int split_num(const char *arg, char **file, uint64_t *num)
{
	const char *c = strrchr(arg, ':');

	if (!c || parse_u64(c + 1, num))
		return -1;
	*file = strndup(arg, (size_t)(c - arg));
	return *file ? 0 : -1;
}

int dec_input_add_elf(struct dec_input *in, const char *arg, char *msg, size_t len)
{
	uint64_t base = 0, minv = UINT64_MAX, bias = 0;
	char *file = NULL;
	bool have_base = !split_num(arg, &file, &base);
	size_t i, n, added = 0;
	GElf_Ehdr eh;
	Elf *e;
	int fd;

	if (!have_base)
		file = xstrdup(arg);
	fd = open(file, O_RDONLY);
	if (fd < 0) {
		snprintf(msg, len, "--elf %s: %s", file, strerror(errno));
		free(file);
		return -1;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) ||
	    elf_getphdrnum(e, &n)) {
		snprintf(msg, len, "--elf %s: not an ELF file (give raw code with --raw FILE:BASE)",
			 file);
		goto fail;
	}
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < minv)
			minv = ph.p_vaddr & ~(uint64_t)0xfff;
	}
	if (have_base)
		bias = base - (minv == UINT64_MAX ? 0 : minv);
	for (i = 0; i < n; i++) {
		struct dec_image *im;
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X) || !ph.p_filesz)
			continue;
		im = add_image(in, file, ph.p_offset, ph.p_filesz, ph.p_vaddr + bias);
		im->elf = xstrdup(file);
		im->elf_off = ph.p_offset;
		added++;
	}
	if (!added) {
		snprintf(msg, len, "--elf %s: no executable segment", file);
		goto fail;
	}
	elf_end(e);
	close(fd);
	free(file);
	return 0;
fail:
	if (e)
		elf_end(e);
	close(fd);
	free(file);
	return -1;
}

int dec_input_add_raw_at(struct dec_input *in, const char *file, uint64_t off, uint64_t size,
			 uint64_t vaddr, char *msg, size_t len)
{
	struct stat st;

	if (stat(file, &st) || !S_ISREG(st.st_mode) || off >= (uint64_t)st.st_size) {
		snprintf(msg, len, "%s: %s", file, errno ? strerror(errno) : "no bytes at that offset");
		return -1;
	}
	if (off + size > (uint64_t)st.st_size)
		size = (uint64_t)st.st_size - off;	/* a mapping may extend past the file */
	add_image(in, file, off, size, vaddr);
	return 0;
}

/* @file (kallsyms or modules) shows zero addresses: say what to do. */
static void hidden_addrs(char *msg, size_t len, const char *file)
{
	snprintf(msg, len, "%s shows no addresses: read it as root, or set the sysctl "
		 "kernel.kptr_restrict to 0", file);
}

/* The address of text symbol @want in a kallsyms-format file; 0 if none. */
static uint64_t kallsyms_addr(FILE *f, const char *want, bool *zero)
{
	char line[512], name[256], type;
	unsigned long long a;

	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || strcmp(name, want))
			continue;
		if (!a)
			*zero = true;
		return a;
	}
	return 0;
}

/*
 * Copy [@vaddr, @vaddr + @size) of the core file @fd (ELF @e, @n program
 * headers) to the end of @out, which is at offset *@at; 1 if copied, 0 if
 * no PT_LOAD segment holds it, -1 on an I/O error (with @msg).
 */
static int kcore_copy(Elf *e, size_t n, int fd, const char *kcore, uint64_t vaddr, uint64_t size,
		      int out, uint64_t *at, char *msg, size_t len)
{
	uint64_t done = 0;
	bool found = false;
	GElf_Phdr ph;
	size_t i;

	for (i = 0; i < n && !found; i++)
		found = gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			vaddr >= ph.p_vaddr && vaddr + size <= ph.p_vaddr + ph.p_filesz;
	if (!found)
		return 0;
	while (done < size) {
		char buf[1 << 16];
		size_t want = size - done < sizeof(buf) ? size - done : sizeof(buf);
		ssize_t got = pread(fd, buf, want, (off_t)(ph.p_offset + (vaddr - ph.p_vaddr) + done));

		if (got <= 0 || write(out, buf, (size_t)got) != got) {
			snprintf(msg, len, "%s: reading %#" PRIx64 "-%#" PRIx64 ": %s", kcore, vaddr,
				 vaddr + size, got < 0 ? strerror(errno) : "short read or write");
			return -1;
		}
		done += (uint64_t)got;
	}
	*at += size;
	return 1;
}

int dec_input_add_kcore(struct dec_input *in, const char *kcore, const char *kallsyms,
			const char *modules, char *msg, size_t len)
{
	uint64_t stext, etext, size, at = 0;
	FILE *ks = fopen(kallsyms, "r"), *mf = NULL;
	struct dec_image *im;
	bool zero = false;
	char path[64], line[1024];
	size_t n;
	int fd = -1, out = -1, st;
	Elf *e = NULL;

	if (!ks) {
		snprintf(msg, len, "%s: %s", kallsyms, strerror(errno));
		return -1;
	}
	stext = kallsyms_addr(ks, "_stext", &zero);
	etext = kallsyms_addr(ks, "_etext", &zero);
	fclose(ks);
	if (zero) {
		hidden_addrs(msg, len, kallsyms);
		return -1;
	}
	if (!stext || etext <= stext || etext - stext > (1ULL << 30)) {
		snprintf(msg, len, "%s: no _stext/_etext text symbols (not a kallsyms file?)",
			 kallsyms);
		return -1;
	}
	size = etext - stext;
	fd = open(kcore, O_RDONLY);
	if (fd < 0) {
		snprintf(msg, len, "%s: %s%s", kcore, strerror(errno),
			 errno == ENOENT ? " (the kernel has no CONFIG_PROC_KCORE: give --elf vmlinux)" :
			 errno == EACCES || errno == EPERM ? " (needs root: CAP_SYS_RAWIO)" : "");
		return -1;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &n)) {
		snprintf(msg, len, "%s: not an ELF core file (%s)", kcore, elf_errmsg(-1));
		goto fail;
	}
	if (modules) {
		mf = fopen(modules, "r");
		if (!mf) {
			snprintf(msg, len, "%s: %s", modules, strerror(errno));
			goto fail;
		}
	}
	/* a private copy, unlinked, named through /proc/self/fd for libipt */
	{
		char tmpl[PATH_MAX];

		snprintf(tmpl, sizeof(tmpl), "%s/ipttool-kcore-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		out = mkstemp(tmpl);
		if (out >= 0)
			unlink(tmpl);
	}
	if (out < 0) {
		snprintf(msg, len, "a temporary file for the kernel text: %s", strerror(errno));
		goto fail;
	}
	st = kcore_copy(e, n, fd, kcore, stext, size, out, &at, msg, len);
	if (st <= 0) {
		if (!st)
			snprintf(msg, len, "%s: no segment holds the kernel text %#" PRIx64 "-%#"
				 PRIx64 " that %s names", kcore, stext, etext, kallsyms);
		goto fail;
	}
	in->fds = xrealloc(in->fds, (in->nr_fds + 1) * sizeof(*in->fds));
	in->fds[in->nr_fds++] = out;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", out);
	im = add_image(in, path, 0, size, stext);
	free(im->name);
	im->name = xstrdup("[kernel.kallsyms]");
	im->kallsyms = xstrdup(kallsyms);
	/* /proc/modules: "name size refs deps state address [taints]" */
	while (mf && fgets(line, sizeof(line), mf)) {
		char name[256], state[32];
		unsigned long long msize, addr;
		uint64_t off = at;

		if (sscanf(line, "%255s %llu %*d %*s %31s %llx", name, &msize, state, &addr) != 4 ||
		    strcmp(state, "Live") || !msize || msize > (1ULL << 30))
			continue;
		if (!addr) {
			hidden_addrs(msg, len, modules);
			goto fail_added;
		}
		st = kcore_copy(e, n, fd, kcore, addr, msize, out, &at, msg, len);
		if (st < 0)
			goto fail_added;
		if (!st)
			continue;
		im = add_image(in, path, off, msize, addr);
		free(im->name);
		im->name = xrealloc(NULL, strlen(name) + 3);
		sprintf(im->name, "[%s]", name);
		im->kallsyms = xstrdup(kallsyms);
	}
	if (mf)
		fclose(mf);
	elf_end(e);
	close(fd);
	return 0;
fail_added:
	/* @out belongs to @in now; the images added stay (the caller gives up) */
	out = -1;
fail:
	if (mf)
		fclose(mf);
	if (e)
		elf_end(e);
	if (out >= 0)
		close(out);
	close(fd);
	return -1;
}

int dec_input_add_raw(struct dec_input *in, const char *arg, char *msg, size_t len)
{
	uint64_t base, off = 0, size = 0;
	char *file = NULL, *rest = NULL;
	struct stat st;
	struct dec_image *im;

	if (split_num(arg, &rest, &base)) {
		snprintf(msg, len, "--raw %s: want FILE:BASE or FILE:OFFSET:SIZE:BASE", arg);
		return -1;
	}
	/* FILE:OFFSET:SIZE:BASE? */
	{
		char *f2 = NULL, *f3 = NULL;

		if (!split_num(rest, &f2, &size) && !split_num(f2, &f3, &off)) {
			file = f3;
			free(f2);
		} else {
			free(f2);
			free(f3);
			file = xstrdup(rest);
			off = size = 0;
		}
	}
	free(rest);
	if (stat(file, &st) || !S_ISREG(st.st_mode)) {
		snprintf(msg, len, "--raw %s: %s", file, errno ? strerror(errno) : "not a file");
		free(file);
		return -1;
	}
	if (!size)
		size = (uint64_t)st.st_size > off ? (uint64_t)st.st_size - off : 0;
	if (!size || off + size > (uint64_t)st.st_size) {
		snprintf(msg, len, "--raw %s: offset/size beyond the file's %lld bytes", file,
			 (long long)st.st_size);
		free(file);
		return -1;
	}
	im = add_image(in, file, off, size, base);
	/* A raw dump that is itself an ELF image (the vDSO) has symbols. */
	{
		FILE *f = fopen(file, "rb");
		char magic[4] = { 0 };

		if (f && fread(magic, 1, 4, f) == 4 && !memcmp(magic, "\177ELF", 4) && !off) {
			im->elf = xstrdup(file);
			im->elf_off = 0;
		}
		if (f)
			fclose(f);
	}
	free(file);
	return 0;
}

/*
 * A ptgen directory's thread names: info.txt's "comm", the name the kernel
 * gave the traced program (/proc/PID/comm, Documentation/groundtruth.rst),
 * for each traced thread (its TID from threads.txt), so --folded and
 * --perfetto name a ptgen thread as they name a capture's.
 */
static void ptgen_comms(struct dec_input *in, const char *dir)
{
	char path[PATH_MAX], line[256], comm[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/info.txt", dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "comm ", 5)) {
			snprintf(comm, sizeof(comm), "%.*s", (int)strcspn(line + 5, "\n"), line + 5);
			break;
		}
	if (f)
		fclose(f);
	if (!comm[0])
		return;
	for (size_t k = 0; k < in->nr_traces; k++) {
		struct dec_comm *c;

		if (in->traces[k].tid <= 0)
			continue;
		in->comms = xrealloc(in->comms, (in->nr_comms + 1) * sizeof(*in->comms));
		c = &in->comms[in->nr_comms++];
		c->pid = 0;
		c->tid = in->traces[k].tid;
		snprintf(c->comm, sizeof(c->comm), "%s", comm);
	}
}

/* ptgen: images.txt + maps.txt + cpu + trace.pt. */
static int load_ptgen(struct dec_input *in, const char *dir, char *msg, size_t len)
{
	char path[PATH_MAX], line[PATH_MAX + 256];
	unsigned long long s, e;
	char name[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu", dir);
	f = fopen(path, "r");
	if (f) {
		if (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			if (!dec_parse_cpu(line, &in->cpu))
				in->have_cpu = true;
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/images.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(msg, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char ipath[PATH_MAX + 300];
		struct stat st;

		if (sscanf(line, "%llx %llx %255s", &s, &e, name) != 3 || e <= s)
			continue;
		snprintf(ipath, sizeof(ipath), "%s/%s", dir, name);
		if (stat(ipath, &st)) {
			snprintf(msg, len, "%s: %s (listed in images.txt)", ipath, strerror(errno));
			fclose(f);
			return -1;
		}
		add_image(in, ipath, 0, e - s, s);
	}
	fclose(f);
	/* Which file each dump came from, for symbols. */
	snprintf(path, sizeof(path), "%s/maps.txt", dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long off;
		char perms[8], mpath[PATH_MAX];
		size_t i;

		mpath[0] = 0;
		if (line[0] == '#' ||
		    sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perms, &off, mpath) < 4)
			continue;
		for (i = 0; i < in->nr_images; i++) {
			struct dec_image *im = &in->images[i];

			if (im->vaddr != s || im->elf)
				continue;
			if (mpath[0] == '/') {
				im->elf = xstrdup(mpath);
				im->elf_off = off;
				free(im->name);
				im->name = xstrdup(base_name(mpath));
			} else if (mpath[0] == '[') {
				im->elf = xstrdup(im->file);	/* the vDSO dump is an ELF image */
				im->elf_off = 0;
				free(im->name);
				im->name = xstrdup(mpath);
			}
		}
	}
	if (f)
		fclose(f);
	/* A timed trace: what libipt needs for MTC and the TSC's frequency. */
	snprintf(path, sizeof(path), "%s/timing", dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char key[64];
		unsigned long long v;

		if (sscanf(line, "%63s %lli", key, (long long *)&v) != 2)
			continue;
		if (!strcmp(key, "mtc_freq"))
			in->mtc_freq = (uint8_t)v;
		else if (!strcmp(key, "nom_freq"))
			in->nom_freq = (uint8_t)v;
		else if (!strcmp(key, "cpuid_0x15_eax"))
			in->cpuid_0x15_eax = (uint32_t)v;
		else if (!strcmp(key, "cpuid_0x15_ebx"))
			in->cpuid_0x15_ebx = (uint32_t)v;
		else if (!strcmp(key, "cpuid_0x15_ecx"))
			in->cpuid_0x15_ecx = (uint32_t)v;
	}
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/trace.pt", dir);
	dec_input_add_trace(in, path, -1);
	/*
	 * Thread K >= 1 of the process: trace.K.pt (Documentation/
	 * groundtruth.rst), the same images; threads.txt gives its TID.
	 */
	for (unsigned int k = 1;; k++) {
		snprintf(path, sizeof(path), "%s/trace.%u.pt", dir, k);
		if (access(path, F_OK))
			break;
		dec_input_add_trace(in, path, -1);
	}
	snprintf(path, sizeof(path), "%s/threads.txt", dir);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned int k;
		long tid;

		if (sscanf(line, "%u %ld", &k, &tid) == 2 && k < in->nr_traces && tid > 0)
			in->traces[k].tid = tid;
	}
	if (f)
		fclose(f);
	ptgen_comms(in, dir);
	/* a followed fork child: its own images, in DIR/proc-N */
	for (unsigned int k = 1;; k++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/proc-%u", dir, k);
		if (stat(path, &st))
			break;
		dec_input_warn(in, "%s: a child process's traces are not decoded with its "
			       "parent's: decode that directory on its own", path);
	}
	snprintf(in->kind, sizeof(in->kind), "ptgen");
	return 0;
}

static int64_t jget_int(struct json_object *o, const char *k, int64_t dflt)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, k, &v) || !v)
		return dflt;
	return json_object_get_int64(v);
}

/*
 * meta.json checks (Documentation/capture-format.rst): a value of the
 * wrong type or out of range is refused with the key named, never read
 * as 0 (json-c's getters turn "six" into 0 silently).
 */
enum mkind { M_INT, M_INT_NULL, M_BOOL, M_STR, M_STR_NULL, M_OBJ_NULL };

struct mfield {
	const char *key;
	enum mkind kind;
	int64_t min, max;	/* M_INT*: the range */
	const char *words;	/* M_STR: the values allowed, "a|b|c" (NULL: any) */
	const char *say;	/* ... as the message says them */
};

static bool word_in(const char *w, const char *words)
{
	size_t n = strlen(w);

	for (const char *p = words; p; p = strchr(p, '|'), p = p ? p + 1 : NULL)
		if (!strncmp(p, w, n) && (p[n] == '|' || !p[n]))
			return true;
	return false;
}

/* Check the keys @f[0..@nf) of object @o (named @where); 0, or -1 + @msg. */
static int check_fields(struct json_object *o, const char *where, const struct mfield *f,
			size_t nf, const char *path, char *msg, size_t len)
{
	for (size_t i = 0; i < nf; i++) {
		struct json_object *v;
		const char *want = NULL;
		char buf[96];

		if (!json_object_object_get_ex(o, f[i].key, &v))
			continue;	/* optional: older captures lack some keys */
		switch (f[i].kind) {
		case M_INT_NULL:
		case M_INT:
			if (!v && f[i].kind == M_INT_NULL)
				break;
			if (!json_object_is_type(v, json_type_int) ||
			    json_object_get_int64(v) < f[i].min ||
			    json_object_get_int64(v) > f[i].max) {
				snprintf(buf, sizeof(buf), "an integer %" PRId64 "..%" PRId64 "%s",
					 f[i].min, f[i].max,
					 f[i].kind == M_INT_NULL ? " or null" : "");
				want = buf;
			}
			break;
		case M_BOOL:
			if (!json_object_is_type(v, json_type_boolean))
				want = "true or false";
			break;
		case M_STR_NULL:
		case M_STR:
			if (!v && f[i].kind == M_STR_NULL)
				break;
			if (!json_object_is_type(v, json_type_string) ||
			    (f[i].words && !word_in(json_object_get_string(v), f[i].words))) {
				snprintf(buf, sizeof(buf), "%s%s", f[i].say ? f[i].say : "a string",
					 f[i].kind == M_STR_NULL ? " or null" : "");
				want = buf;
			}
			break;
		case M_OBJ_NULL:
			if (v && !json_object_is_type(v, json_type_object))
				want = "an object or null";
			break;
		}
		if (want) {
			const char *is = v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) :
					     "null";

			snprintf(msg, len, "%s: \"%s%s\" is %.60s: want %s", path, where, f[i].key,
				 is, want);
			return -1;
		}
	}
	return 0;
}

#define NF(a) (sizeof(a) / sizeof((a)[0]))

/* Table entries (designated: clang's -Wmissing-field-initializers) */
#define MF(k, t)		{ .key = (k), .kind = (t) }
#define MI(k, t, lo, hi)	{ .key = (k), .kind = (t), .min = (lo), .max = (hi) }
#define MS(k, w, s)		{ .key = (k), .kind = M_STR, .words = (w), .say = (s) }

static int check_meta(struct json_object *o, const char *path, char *msg, size_t len)
{
	static const struct mfield top[] = {
		MF("complete", M_BOOL), MF("incomplete_reason", M_STR_NULL),
		MS("mode", "cpu|thread", "\"cpu\" or \"thread\""),
		MF("cpu", M_OBJ_NULL), MF("config", M_OBJ_NULL), MF("time_conv", M_OBJ_NULL),
		MF("program", M_OBJ_NULL), MF("sideband", M_OBJ_NULL),
	};
	static const struct mfield cpu[] = {
		MI("family", M_INT, 0, 0xffff), MI("model", M_INT, 0, 0xff),
		MI("stepping", M_INT, 0, 0xff), MI("nom_freq", M_INT, 0, 0xff),
		MF("cpuid_15", M_OBJ_NULL),
	};
	static const struct mfield c15[] = {
		MI("eax", M_INT, 0, UINT32_MAX), MI("ebx", M_INT, 0, UINT32_MAX),
		MI("ecx", M_INT, 0, UINT32_MAX), MI("edx", M_INT, 0, UINT32_MAX),
	};
	/*
	 * MTCFreq is IA32_RTIT_CTL bits 17:14 (Intel SDM Vol. 3C, Intel
	 * Processor Trace chapter, "IA32_RTIT_CTL MSR"): 0..15.
	 */
	static const struct mfield cfg[] = {
		MI("mtc_freq", M_INT_NULL, 0, 15), MF("tsc", M_BOOL),
	};
	static const struct mfield tc[] = {
		MI("time_shift", M_INT, 0, 63), MI("time_mult", M_INT, 0, UINT32_MAX),
		MI("time_zero", M_INT, INT64_MIN, INT64_MAX),
	};
	static const struct mfield prog[] = { MI("pid", M_INT_NULL, 0, INT32_MAX) };
	static const struct mfield tr[] = {
		MF("file", M_STR), MI("cpu", M_INT, 0, INT32_MAX), MI("tid", M_INT, 0, INT32_MAX),
		MI("size", M_INT, 0, INT64_MAX), MF("wrapped", M_BOOL),
		MI("wrap_count", M_INT, 0, INT64_MAX), MI("bytes_lost", M_INT, 0, INT64_MAX),
		MF("stopped_full", M_BOOL), MF("hw_error", M_BOOL),
		MS("loss", "none|overwritten|truncated|hw_error",
		   "\"none\", \"overwritten\", \"truncated\" or \"hw_error\""),
		MF("write_error", M_STR_NULL),
	};
	struct json_object *v, *t;

	if (check_fields(o, "", top, NF(top), path, msg, len))
		return -1;
	if (json_object_object_get_ex(o, "cpu", &v) && v &&
	    (check_fields(v, "cpu.", cpu, NF(cpu), path, msg, len) ||
	     (json_object_object_get_ex(v, "cpuid_15", &t) && t &&
	      check_fields(t, "cpu.cpuid_15.", c15, NF(c15), path, msg, len))))
		return -1;
	if (json_object_object_get_ex(o, "config", &v) && v &&
	    check_fields(v, "config.", cfg, NF(cfg), path, msg, len))
		return -1;
	if (json_object_object_get_ex(o, "time_conv", &v) && v &&
	    check_fields(v, "time_conv.", tc, NF(tc), path, msg, len))
		return -1;
	if (json_object_object_get_ex(o, "program", &v) && v &&
	    check_fields(v, "program.", prog, NF(prog), path, msg, len))
		return -1;
	if (!json_object_object_get_ex(o, "traces", &v) ||
	    !json_object_is_type(v, json_type_array)) {
		snprintf(msg, len, "%s: \"traces\" is missing or not an array: want an array of "
			 "objects, one per trace file", path);
		return -1;
	}
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		struct json_object *f;
		char where[48];

		t = json_object_array_get_idx(v, i);
		snprintf(where, sizeof(where), "traces[%zu].", i);
		if (!json_object_is_type(t, json_type_object)) {
			snprintf(msg, len, "%s: \"traces[%zu]\" is not an object", path, i);
			return -1;
		}
		if (check_fields(t, where, tr, NF(tr), path, msg, len))
			return -1;
		if (!json_object_object_get_ex(t, "file", &f) || !*json_object_get_string(f) ||
		    strchr(json_object_get_string(f), '/')) {
			snprintf(msg, len, "%s: \"traces[%zu].file\" is %s: want a file name in the "
				 "capture directory (\"cpuN.pt\")", path, i,
				 f ? json_object_to_json_string(f) : "missing");
			return -1;
		}
	}
	return 0;
}

/*
 * What the capture's metadata says is missing, and trace files shorter
 * than it says: warnings (the decode goes on; ipttool exits 3).
 */
static void meta_warnings(struct dec_input *in, struct json_object *o, const char *dir)
{
	struct json_object *v, *traces;

	if (json_object_object_get_ex(o, "complete", &v) && !json_object_get_boolean(v)) {
		struct json_object *r = NULL;

		json_object_object_get_ex(o, "incomplete_reason", &r);
		dec_input_warn(in, "%s: the capture is incomplete: %s", dir,
			       r ? json_object_get_string(r) : "no reason given");
	}
	json_object_object_get_ex(o, "traces", &traces);
	for (size_t i = 0; i < json_object_array_length(traces); i++) {
		struct json_object *t = json_object_array_get_idx(traces, i), *f, *e;
		const char *file, *loss = NULL;
		char path[PATH_MAX];
		struct stat st;

		json_object_object_get_ex(t, "file", &f);
		file = json_object_get_string(f);
		if (json_object_object_get_ex(t, "loss", &v))
			loss = json_object_get_string(v);
		if (jget_int(t, "wrapped", 0) || (loss && !strcmp(loss, "overwritten")))
			dec_input_warn(in, "%s: the ring wrapped %" PRId64 " time(s): its oldest %"
				       PRId64 " bytes were overwritten before they were saved", file,
				       jget_int(t, "wrap_count", 0), jget_int(t, "bytes_lost", 0));
		if (jget_int(t, "stopped_full", 0) || (loss && !strcmp(loss, "truncated")))
			dec_input_warn(in, "%s: the buffer filled and the unit stopped: what ran "
				       "after that is not in the trace", file);
		if (jget_int(t, "hw_error", 0) || (loss && !strcmp(loss, "hw_error")))
			dec_input_warn(in, "%s: the unit reported an operational error", file);
		if (json_object_object_get_ex(t, "write_error", &e) && e)
			dec_input_warn(in, "%s: saving it failed (%s)", file,
				       json_object_get_string(e));
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		if (json_object_object_get_ex(t, "size", &v) && !stat(path, &st) &&
		    (uint64_t)st.st_size != (uint64_t)json_object_get_int64(v))
			dec_input_warn(in, "%s: %lld bytes, but meta.json says %" PRId64 ": the file "
				       "was %s", file, (long long)st.st_size, json_object_get_int64(v),
				       (uint64_t)st.st_size < (uint64_t)json_object_get_int64(v) ?
				       "cut short" : "changed");
	}
}

static int load_capture(struct dec_input *in, const char *dir, char *msg, size_t len)
{
	char path[PATH_MAX];
	struct json_object *o, *cpu = NULL, *cfg = NULL, *traces = NULL, *c15 = NULL, *v;
	size_t i;

	snprintf(path, sizeof(path), "%s/meta.json", dir);
	o = json_object_from_file(path);
	if (!o) {
		snprintf(msg, len, "%s: not valid JSON: %s", path, json_util_get_last_err());
		return -1;
	}
	if (!json_object_object_get_ex(o, "format", &v) ||
	    strcmp(json_object_get_string(v), "ipt-capture")) {
		snprintf(msg, len, "%s: not an ipt capture (no \"format\": \"ipt-capture\")", path);
		goto fail;
	}
	if (jget_int(o, "format_version", -1) != 1) {
		snprintf(msg, len, "%s: capture format version %d; this decoder reads version 1",
			 path, (int)jget_int(o, "format_version", -1));
		goto fail;
	}
	if (check_meta(o, path, msg, len))
		goto fail;
	meta_warnings(in, o, dir);
	json_object_object_get_ex(o, "cpu", &cpu);
	json_object_object_get_ex(o, "config", &cfg);
	if (cpu) {
		struct json_object *vendor = NULL;

		json_object_object_get_ex(cpu, "vendor", &vendor);
		memset(&in->cpu, 0, sizeof(in->cpu));
		in->cpu.vendor = pcv_intel;
		in->cpu.family = (uint16_t)jget_int(cpu, "family", 0);
		in->cpu.model = (uint8_t)jget_int(cpu, "model", 0);
		in->cpu.stepping = (uint8_t)jget_int(cpu, "stepping", 0);
		in->have_cpu = in->cpu.family != 0;
		in->nom_freq = (uint8_t)jget_int(cpu, "nom_freq", 0);
		if (json_object_object_get_ex(cpu, "cpuid_15", &c15) && c15) {
			in->cpuid_0x15_eax = (uint32_t)jget_int(c15, "eax", 0);
			in->cpuid_0x15_ebx = (uint32_t)jget_int(c15, "ebx", 0);
			in->cpuid_0x15_ecx = (uint32_t)jget_int(c15, "ecx", 0);
		}
	}
	{
		struct json_object *tc = NULL;

		if (json_object_object_get_ex(o, "time_conv", &tc) && tc &&
		    json_object_is_type(tc, json_type_object) && jget_int(tc, "time_mult", 0) > 0 &&
		    jget_int(tc, "time_shift", -1) >= 0 && jget_int(tc, "time_shift", -1) < 64) {
			in->have_time_conv = true;
			in->time_shift = (uint16_t)jget_int(tc, "time_shift", 0);
			in->time_mult = (uint32_t)jget_int(tc, "time_mult", 0);
			in->time_zero = (uint64_t)jget_int(tc, "time_zero", 0);
		}
	}
	if (cfg) {
		in->mtc_freq = (uint8_t)jget_int(cfg, "mtc_freq", 0);
		in->cfg_tsc = jget_int(cfg, "tsc", 0) != 0;
	}
	if (!json_object_object_get_ex(o, "traces", &traces) ||
	    !json_object_is_type(traces, json_type_array)) {
		snprintf(msg, len, "%s: no \"traces\" array", path);
		goto fail;
	}
	for (i = 0; i < json_object_array_length(traces); i++) {
		struct json_object *t = json_object_array_get_idx(traces, i), *fv;
		char tp[PATH_MAX + 64];

		if (!json_object_object_get_ex(t, "file", &fv) || strchr(json_object_get_string(fv), '/'))
			continue;
		snprintf(tp, sizeof(tp), "%s/%s", dir, json_object_get_string(fv));
		dec_input_add_trace(in, tp, (int)jget_int(t, "cpu", -1));
		in->traces[in->nr_traces - 1].tid = (long)jget_int(t, "tid", -1);
	}
	{
		struct json_object *mode = NULL, *prog = NULL;

		in->per_thread = json_object_object_get_ex(o, "mode", &mode) && mode &&
				 !strcmp(json_object_get_string(mode), "thread");
		if (json_object_object_get_ex(o, "program", &prog) && prog)
			in->program_pid = (long)jget_int(prog, "pid", 0);
	}
	snprintf(in->kind, sizeof(in->kind), "capture");
	{
		struct json_object *sb = NULL, *file = NULL;
		char sbmsg[256];

		if (json_object_object_get_ex(o, "sideband", &sb) && sb &&
		    json_object_object_get_ex(sb, "file", &file) && file) {
			if (dec_input_sideband(in, dir, in->pid, sbmsg, sizeof(sbmsg))) {
				if (in->pid) {
					snprintf(msg, len, "%s", sbmsg);
					goto fail;
				}
				snprintf(in->note, sizeof(in->note),
					 "sideband not used (%.180s): code comes only from --elf/--raw",
					 sbmsg);
			}
		} else {
			snprintf(in->note, sizeof(in->note),
				 "the capture has no sideband: code comes only from --elf/--raw");
		}
	}
	json_object_put(o);
	return 0;
fail:
	json_object_put(o);
	return -1;
}

int dec_input_load_dir(struct dec_input *in, const char *dir, char *msg, size_t len)
{
	char path[PATH_MAX];
	struct stat st;

	if (stat(dir, &st)) {
		snprintf(msg, len, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(msg, len, "%s: not a directory (give a raw trace file with --pt FILE)", dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	if (!access(path, F_OK))
		return load_capture(in, dir, msg, len);
	snprintf(path, sizeof(path), "%s/images.txt", dir);
	if (!access(path, F_OK))
		return load_ptgen(in, dir, msg, len);
	snprintf(msg, len, "%s: neither an ipt capture (meta.json) nor a ptgen directory "
		 "(images.txt)", dir);
	return -1;
}

/* ---- decoding ---------------------------------------------------------------- */

const char *dec_gap_name(enum dec_gap g)
{
	static const char *const n[GAP_NR] = {
		[GAP_NONE] = "none", [GAP_OVERFLOW] = "overflow", [GAP_DECODE] = "decode error",
		[GAP_NOMAP] = "no image", [GAP_PRE_PSB] = "before first PSB",
		[GAP_LOOP] = "endless code",
	};

	return g < GAP_NR ? n[g] : "?";
}

/* One Zydis decoder per exec mode (enum pt_exec_mode); 64-bit for an unknown one. */
static ZydisDecoder zdec[4];
static pthread_once_t zonce = PTHREAD_ONCE_INIT;

static void zinit(void)
{
	ZydisDecoderInit(&zdec[ptem_unknown], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecoderInit(&zdec[ptem_16bit], ZYDIS_MACHINE_MODE_LEGACY_16, ZYDIS_STACK_WIDTH_16);
	ZydisDecoderInit(&zdec[ptem_32bit], ZYDIS_MACHINE_MODE_LEGACY_32, ZYDIS_STACK_WIDTH_32);
	ZydisDecoderInit(&zdec[ptem_64bit], ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (int i = 0; i < 4; i++)
		ZydisDecoderEnableMode(&zdec[i], ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
}

const ZydisDecoder *dec_zydis(uint8_t mode)
{
	pthread_once(&zonce, zinit);
	return &zdec[mode < 4 ? mode : ptem_unknown];
}

const uint8_t *dec_code_at(const struct dec_ctx *c, int isid, uint64_t ip, size_t *avail)
{
	const struct dec_code *k;

	if (isid <= 0 || isid >= c->nr_code)
		return NULL;
	k = &c->code[isid];
	if (!k->bytes || ip < k->vaddr || ip >= k->vaddr + k->size)
		return NULL;
	*avail = k->vaddr + k->size - ip;
	return k->bytes + (ip - k->vaddr);
}

unsigned int dec_insn_size(struct dec_ctx *c, int isid, uint64_t ip, uint8_t mode, uint8_t *bytes)
{
	ZydisDecodedInstruction zi;
	const uint8_t *p;
	size_t n;

	p = dec_code_at(c, isid, ip, &n);
	if (!p || mode == ptem_unknown)
		return 0;
	if (n > 15)
		n = 15;
	if (bytes)
		memcpy(bytes, p, n);
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec_zydis(mode), NULL, p, n, &zi)))
		return 0;
	return zi.length;
}

/*
 * The instructions of block @b, by Zydis in the block's own exec mode:
 * into @ips/@sizes (room for @b->ninsn); the number found, or 0 when the
 * walk cannot be trusted: unreadable code, an exec mode Zydis does not
 * know, or a walk that does not end at the block's last instruction
 * (Zydis disagrees with libipt on a length) when blocks are contiguous.
 */
static size_t walk(struct dec_ctx *c, const struct dec_item *b, uint64_t *ips, uint8_t *sizes)
{
	const ZydisDecoder *zd = dec_zydis(b->mode);
	uint64_t ip = b->ip;
	size_t i;

	if (b->mode == ptem_unknown)
		return 0;
	for (i = 0; i < b->ninsn; i++) {
		ZydisDecodedInstruction zi;
		bool last = i + 1 == b->ninsn;
		unsigned int size = 0;

		memset(&zi, 0, sizeof(zi));
		if (last && b->last_size) {
			size = b->last_size;
		} else {
			size_t n;
			const uint8_t *p = dec_code_at(c, b->isid, ip, &n);

			if (p && ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(zd, NULL, p, n > 15 ? 15 : n,
									     &zi)))
				size = zi.length;
		}
		/* the last one's address is libipt's: its size may stay unknown (0) */
		if (!size && !last)
			return 0;
		ips[i] = ip;
		sizes[i] = (uint8_t)size;
		/*
		 * Contiguous: libipt ends a block after each near direct call
		 * and jump (end_on_call, end_on_jump: dec_open()), the only
		 * branches it follows without trace; other blocks have one
		 * instruction (the instruction decoder).
		 */
		ip += size;
		if (b->mode != ptem_64bit)
			ip &= b->mode == ptem_32bit ? 0xffffffffULL : 0xffffULL;
	}
	return ips[b->ninsn - 1] == b->end_ip ? b->ninsn : 0;
}

size_t dec_walk_block(struct dec_ctx *c, const struct dec_item *b, dec_insn_fn fn, void *arg)
{
	uint64_t sips[64], *ips = sips;
	uint8_t ssz[64], *sizes = ssz;
	size_t i, n;

	if (!b->ninsn)
		return 0;
	if (b->ninsn > 64) {
		ips = malloc(b->ninsn * sizeof(*ips));
		sizes = malloc(b->ninsn);
		if (!ips || !sizes) {
			free(ips);
			free(sizes);
			return 0;
		}
	}
	n = walk(c, b, ips, sizes);
	for (i = 0; i < n; i++)
		fn(arg, ips[i], sizes[i], i + 1 == n, b);
	if (ips != sips) {
		free(ips);
		free(sizes);
	}
	return n;
}

size_t dec_find_psbs(const uint8_t *buf, size_t len, const struct pt_config *tmpl, size_t parts,
		     uint64_t **offs, uint64_t *first_tsc)
{
	static const uint8_t psb_bytes[16] = {
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	};
	struct pt_packet_decoder *pd;
	struct pt_config cfg = *tmpl;
	size_t n = 0, cap = 0;
	uint64_t off, stride = 0;
	int st;

	*offs = NULL;
	if (first_tsc)
		*first_tsc = 0;
	if (!len)
		return 0;
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return 0;
	for (st = pt_pkt_sync_forward(pd); st >= 0;) {
		struct pt_packet p;
		const uint8_t *next;

		if (pt_pkt_get_sync_offset(pd, &off) < 0)
			break;
		/* the PSB+: its TSC */
		while (pt_pkt_next(pd, &p, sizeof(p)) >= 0 && p.type != ppt_psbend) {
			if (p.type == ppt_tsc && first_tsc && !*first_tsc)
				*first_tsc = p.payload.tsc.tsc;
			if (p.type == ppt_ovf)
				break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			*offs = xrealloc(*offs, cap * sizeof(**offs));
		}
		(*offs)[n++] = off;
		/* the next PSB @stride bytes on: a search, no packet decoding */
		if (!stride)
			stride = (len - off) / parts > sizeof(psb_bytes) ?
				 (len - off) / parts : sizeof(psb_bytes);
		if (off + stride >= len)
			break;
		next = memmem(buf + off + stride, len - off - stride, psb_bytes, sizeof(psb_bytes));
		if (!next)
			break;
		st = pt_pkt_sync_set(pd, (uint64_t)(next - buf));
	}
	pt_pkt_free_decoder(pd);
	return n;
}

/* Whether the PSB+ at @off of @pd's trace has a MODE.EXEC. */
static bool psb_has_mode(struct pt_packet_decoder *pd, uint64_t off)
{
	struct pt_packet pkt;
	int n = 0;

	if (pt_pkt_sync_set(pd, off) < 0)
		return true;
	while (n++ < 64 && pt_pkt_next(pd, &pkt, sizeof(pkt)) >= 0) {
		if (pkt.type == ppt_mode && pkt.payload.mode.leaf == pt_mol_exec)
			return true;
		if (pkt.type == ppt_psbend || (n > 1 && pkt.type == ppt_psb))
			return false;
	}
	return true;	/* a broken PSB+: the decoder does not sync there */
}

bool dec_mixed_modes(const uint8_t *buf, size_t len, const struct pt_config *tmpl)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	struct pt_config cfg = *tmpl;
	struct pt_packet_decoder *pd;
	const uint8_t *p = buf, *end = buf + len;
	bool mixed = false;
	int seen = -1, modes = 0;

	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return true;
	/* a PSB+ without MODE.EXEC: decoders synced there have no mode until one */
	while (!mixed && p < end && (p = memmem(p, (size_t)(end - p), psb, sizeof(psb)))) {
		mixed = !psb_has_mode(pd, (uint64_t)(p - buf));
		p += sizeof(psb);
	}
	/* MODE.EXEC: 0x99, then a byte with bits 7:5 clear; CS.D and CS.L in bits 1:0 */
	for (p = buf; !mixed && p + 1 < end && (p = memchr(p, 0x99, (size_t)(end - p - 1))); p++) {
		if (p[1] & 0xe0)
			continue;
		if (seen < 0) {
			seen = p[1] & 3;
		} else if (seen != (p[1] & 3)) {
			/* two values: maybe only payload bytes; ask libipt (a new decoder, from the start) */
			struct pt_packet_decoder *all = pt_pkt_alloc_decoder(&cfg);

			while (all && pt_pkt_sync_forward(all) >= 0) {
				struct pt_packet pkt;

				while (pt_pkt_next(all, &pkt, sizeof(pkt)) >= 0)
					if (pkt.type == ppt_mode && pkt.payload.mode.leaf == pt_mol_exec)
						modes |= 1 << pt_get_exec_mode(&pkt.payload.mode.bits.exec);
			}
			pt_pkt_free_decoder(all);
			mixed = !all || (modes & (modes - 1));
			break;
		}
	}
	pt_pkt_free_decoder(pd);
	return mixed;
}

/*
 * The image section cache this thread's decoders take their sections from:
 * the capture's (c->iscache), or the worker's own copy of it (same files in
 * the same order, so the same isids).  libipt locks a section, and the
 * cache, each time a decoder moves from one section to another (its
 * one-entry mapped-section cache: a call into libc and back is two
 * moves); two workers doing that on the same sections made the parallel
 * decode 6% slower (decode.rst, Benchmark).  A copy costs libipt's block
 * cache again, 4 bytes per byte of code, so workers get one only while
 * that stays under DEC_OWN_ISCACHE_MAX.
 */
#define DEC_OWN_ISCACHE_MAX (256ULL << 20)

/* A copy of @c's section cache with the same isids, or NULL. */
static struct pt_image_section_cache *iscache_copy(const struct dec_ctx *c)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc("ipttool-worker");
	size_t i;

	for (i = 0; isc && i < c->in->nr_images; i++) {
		const struct dec_image *im = &c->in->images[i];

		if (pt_iscache_add_file(isc, im->file, im->offset, im->size, im->vaddr) !=
		    c->isids[i]) {
			pt_iscache_free(isc);
			return NULL;
		}
	}
	return isc;
}

/* Whether @jobs workers' own section caches stay under DEC_OWN_ISCACHE_MAX. */
static bool own_iscaches_fit(const struct dec_ctx *c, unsigned int jobs)
{
	uint64_t code = 0;
	int i;

	for (i = 1; i < c->nr_code; i++)
		code += c->code[i].size;
	return jobs > 1 && code * 4 * jobs <= DEC_OWN_ISCACHE_MAX;
}

/*
 * Decoder threads run on stacks this big.  libipt 2.0.5's block decoder
 * recurses along a block (about 200 bytes of stack per instruction); with
 * blocks that do not end at calls and jumps a "jmp ." made a 65535
 * instruction block and overflowed 8 MB.  Blocks now always end there,
 * so this is only a margin; the stack is address space, only what is
 * used is backed by memory.
 */
#define DEC_STACK (256UL << 20)

/*
 * Workers claim segments in trace order and decode them; the orderer
 * takes them in the same order as they complete, makes each converge with
 * the next (step.c), renders and frees it.  Workers stay at most @window
 * segments ahead of it, so memory is bounded by the window, not by the
 * trace.
 */
struct work {
	struct dec_ctx *c;
	const struct dec_outputs *o;
	struct dec_render *rd;
	size_t total, next, rendered, window;
	size_t *map_trace, *map_seg;
	bool *done;
	unsigned int jobs;	/* worker threads running (0: the orderer decodes) */
	bool own_iscache;	/* each worker copies the section cache */
	struct pt_image_section_cache **iscs;	/* the workers' copies, freed at the end */
	unsigned int nr_iscs;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void decode_one(struct work *w, size_t k, struct pt_image_section_cache *isc)
{
	struct dec_trace_result *r = &w->c->res[w->map_trace[k]];

	dec_segment_run(w->c, r, &r->segs[w->map_seg[k]], w->map_seg[k] == 0, isc);
}

static void *worker(void *arg)
{
	struct work *w = arg;
	struct pt_image_section_cache *isc = w->c->iscache;
	size_t k;

	if (w->own_iscache) {
		struct pt_image_section_cache *own = iscache_copy(w->c);

		pthread_mutex_lock(&w->lock);
		if (own) {
			w->iscs[w->nr_iscs++] = own;
			isc = own;
		}
		pthread_mutex_unlock(&w->lock);
	}
	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (w->next < w->total && w->next >= w->rendered + w->window)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->next >= w->total) {
			pthread_mutex_unlock(&w->lock);
			return NULL;
		}
		k = w->next++;
		pthread_mutex_unlock(&w->lock);
		decode_one(w, k, isc);
		pthread_mutex_lock(&w->lock);
		w->done[k] = true;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
}

/* Segment @k is decoded (by a worker, or now by this thread). */
static void wait_done(struct work *w, size_t k)
{
	if (!w->jobs) {
		if (!w->done[k])
			decode_one(w, k, w->c->iscache);
		w->done[k] = true;
		return;
	}
	pthread_mutex_lock(&w->lock);
	while (!w->done[k])
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/* A rendered segment: count it, keep its errors, free its items. */
static void retire_segment(struct dec_trace_result *r, struct dec_segment *s)
{
	size_t m;

	r->insns += s->insns;
	for (m = s->skip; m < s->nr; m++) {
		const struct dec_item *it = &s->items[m];

		if (it->kind != DI_GAP)
			continue;
		r->gaps[it->gap]++;
		r->gap_bytes[it->gap] += it->skipped;
		r->gap_items = xrealloc(r->gap_items, (r->nr_gap_items + 1) * sizeof(*r->gap_items));
		r->gap_items[r->nr_gap_items++] = *it;
	}
	free(s->items);
	s->items = NULL;
	s->nr = s->cap = s->skip = 0;
	free(s->ck);
	s->ck = NULL;
	s->nr_ck = s->cap_ck = 0;
	dec_prof_free(s->prof);
	s->prof = NULL;
}

/*
 * The orderer: segments in trace order, each made to converge with the
 * next, rendered and retired.
 */
static void *orderer(void *arg)
{
	struct work *w = arg;
	struct dec_ctx *c = w->c;
	uint64_t insns = 0;
	size_t i, k;

	for (i = 0, k = 0; i < c->nr_res; i++) {
		struct dec_trace_result *r = &c->res[i];

		dec_render_trace_begin(w->rd, r, i);
		for (size_t s = 0; s < r->nr_segs; s++, k++) {
			struct dec_segment *seg = &r->segs[s];

			wait_done(w, k);
			if (s + 1 < r->nr_segs)
				wait_done(w, k + 1);
			dec_converge(r, s);
			dec_render_segment(w->rd, seg);
			insns += seg->insns;
			retire_segment(r, seg);
			if (c->opt.progress)
				c->opt.progress(c->opt.progress_arg, k + 1, w->total, insns);
			if (w->jobs) {
				pthread_mutex_lock(&w->lock);
				w->rendered = k + 1;
				pthread_cond_broadcast(&w->cond);
				pthread_mutex_unlock(&w->lock);
			}
		}
		dec_render_trace_end(w->rd);
	}
	return NULL;
}

int dec_open(struct dec_ctx *c, const struct dec_input *in, const struct dec_options *opt,
	     char *msg, size_t len)
{
	size_t i;
	int e;

	memset(c, 0, sizeof(*c));
	c->in = in;
	c->opt = *opt;
	pt_config_init(&c->cfg);
	if (in->have_cpu) {
		c->cfg.cpu = in->cpu;
		e = pt_cpu_errata(&c->cfg.errata, &c->cfg.cpu);
		if (e < 0)
			snprintf(c->errata_note, sizeof(c->errata_note),
				 "no errata for CPU %u/%u/%u: %s", in->cpu.family, in->cpu.model,
				 in->cpu.stepping, pt_errstr(pt_errcode(e)));
	} else {
		snprintf(c->errata_note, sizeof(c->errata_note),
			 "no CPU given (--cpu F/M/S): errata workarounds are off");
	}
	c->cfg.mtc_freq = in->mtc_freq;
	c->cfg.nom_freq = in->nom_freq;
	c->cfg.cpuid_0x15_eax = in->cpuid_0x15_eax;
	c->cfg.cpuid_0x15_ebx = in->cpuid_0x15_ebx;
	/*
	 * Blocks end at calls (the call trace needs them at block ends) and
	 * at jumps (walking a block needs its instructions contiguous), in
	 * every mode, the summary alone too: the endless-code rule is
	 * checked after each block, so every output (and the reference,
	 * tools/testing/decode/ref.c) must see the same blocks to count the
	 * same instructions.  Longer blocks were 4% faster (decode.rst).
	 */
	c->cfg.flags.variant.block.end_on_call = 1;
	c->cfg.flags.variant.block.end_on_jump = 1;
	if (opt->insn_decoder)
		memset(&c->cfg.flags, 0, sizeof(c->cfg.flags));
	c->iscache = pt_iscache_alloc("ipttool-decode");
	if (!c->iscache) {
		snprintf(msg, len, "cannot allocate libipt's image section cache");
		return -1;
	}
	c->isids = calloc(in->nr_images + 1, sizeof(int));
	for (i = 0; i < in->nr_images; i++) {
		const struct dec_image *im = &in->images[i];

		c->isids[i] = pt_iscache_add_file(c->iscache, im->file, im->offset, im->size, im->vaddr);
		if (c->isids[i] < 0) {
			snprintf(msg, len, "%s: libipt cannot use it as code at %#" PRIx64 ": %s",
				 im->file, im->vaddr, pt_errstr(pt_errcode(c->isids[i])));
			return -1;
		}
	}
	/* map the bytes for lock-free instruction walks; isids are small and dense */
	c->nr_code = 1;
	for (i = 0; i < in->nr_images; i++)
		if (c->isids[i] >= c->nr_code)
			c->nr_code = c->isids[i] + 1;
	c->code = calloc((size_t)c->nr_code, sizeof(*c->code));
	for (i = 0; c->code && i < in->nr_images; i++) {
		const struct dec_image *im = &in->images[i];
		struct dec_code *k = &c->code[c->isids[i]];
		int fd = open(im->file, O_RDONLY);
		struct stat st;

		if (fd < 0)
			continue;
		if (!fstat(fd, &st) && im->offset + im->size <= (uint64_t)st.st_size && st.st_size) {
			k->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (k->map == MAP_FAILED) {
				k->map = NULL;
			} else {
				k->maplen = (size_t)st.st_size;
				k->bytes = (const uint8_t *)k->map + im->offset;
				k->vaddr = im->vaddr;
				k->size = im->size;
			}
		}
		close(fd);
	}
	c->syms = dec_syms_load(in);
	return 0;
}

static uint8_t *slurp(const char *path, size_t *len, char *msg, size_t mlen)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		snprintf(msg, mlen, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	p = xrealloc(NULL, (size_t)n + 1);
	if (fread(p, 1, (size_t)n, f) != (size_t)n) {
		snprintf(msg, mlen, "%s: read error", path);
		free(p);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

/*
 * Whether @r's trace ends inside a packet (a file cut short): walk the
 * packets from its last PSB (libipt's backward sync from the end); libipt
 * reports a packet that runs past the end as -pte_eos.
 */
static void check_cut(struct dec_ctx *c, struct dec_trace_result *r)
{
	struct pt_config cfg = c->cfg;
	struct pt_packet_decoder *pd;
	struct pt_packet pkt;
	uint64_t off = 0;
	int st;

	cfg.begin = r->buf;
	cfg.end = r->buf + r->len;
	pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return;
	st = pt_pkt_sync_backward(pd);
	while (st >= 0) {
		pt_pkt_get_offset(pd, &off);
		st = pt_pkt_next(pd, &pkt, sizeof(pkt));
	}
	if (st == -pte_eos && off < r->len) {
		r->cut = true;
		r->cut_off = off;
	}
	pt_pkt_free_decoder(pd);
}

/*
 * Cut @r's trace into segments at PSBs: at most 64, each at least 1/64 of
 * it, so that the cut depends on the trace only (never on -J).
 */
static void make_segments(struct dec_ctx *c, struct dec_trace_result *r)
{
	uint64_t *psb;
	size_t n = dec_find_psbs(r->buf, r->len, &c->cfg, c->opt.no_split ? 1 : 64, &psb,
				 &r->first_tsc), i;

	if (!n) {
		snprintf(r->error, sizeof(r->error),
			 "%s: no PSB in %zu bytes: not Intel PT, or cut before its first PSB",
			 r->trace->file, r->len);
		if (r->len) {
			r->gaps[GAP_PRE_PSB]++;
			r->gap_bytes[GAP_PRE_PSB] += r->len;
		}
		return;
	}
	if (psb[0]) {
		r->gaps[GAP_PRE_PSB]++;
		r->gap_bytes[GAP_PRE_PSB] += psb[0];
	}
	r->segs = xrealloc(NULL, n * sizeof(*r->segs));
	memset(r->segs, 0, n * sizeof(*r->segs));
	for (i = 0; i < n; i++) {
		r->segs[i].begin = psb[i];
		r->segs[i].end = i + 1 < n ? psb[i + 1] : r->len;
	}
	r->nr_segs = n;
	free(psb);
	r->uncached = !c->opt.insn_decoder && dec_mixed_modes(r->buf, r->len, &c->cfg);
}

bool dec_tsc_ns(const struct dec_ctx *c, uint64_t tsc, uint64_t *ns)
{
	const struct dec_input *in = c->in;

	if (in->have_time_conv) {
		/* the kernel's formula (perf_event_mmap_page) */
		uint64_t quot = tsc >> in->time_shift;
		uint64_t rem = tsc & (((uint64_t)1 << in->time_shift) - 1);

		*ns = in->time_zero + quot * in->time_mult + ((rem * in->time_mult) >> in->time_shift);
		return true;
	}
	if (c->tsc_hz) {
		*ns = (uint64_t)((unsigned __int128)tsc * 1000000000u / c->tsc_hz);
		return true;
	}
	return false;
}

int dec_run(struct dec_ctx *c, const struct dec_outputs *o, char *msg, size_t len)
{
	struct work w = { .c = c };
	struct dec_render *rd = NULL;
	unsigned int jobs = c->opt.jobs, j = 0;
	bool have_orderer = false;
	pthread_t *th = NULL;
	pthread_attr_t attr;
	size_t i, k, ok = 0;

	c->nr_res = c->in->nr_traces;
	c->res = calloc(c->nr_res ? c->nr_res : 1, sizeof(*c->res));
	if (c->in->cpuid_0x15_eax && c->in->cpuid_0x15_ebx && c->in->cpuid_0x15_ecx)
		c->tsc_hz = (uint64_t)c->in->cpuid_0x15_ecx * c->in->cpuid_0x15_ebx /
			    c->in->cpuid_0x15_eax;
	for (i = 0; i < c->nr_res; i++) {
		struct dec_trace_result *r = &c->res[i];

		r->trace = &c->in->traces[i];
		if (r->trace->data) {
			r->buf = xrealloc(NULL, r->trace->size + 1);
			memcpy(r->buf, r->trace->data, r->trace->size);
			r->len = r->trace->size;
		} else {
			r->buf = slurp(r->trace->file, &r->len, r->error, sizeof(r->error));
		}
		if (!r->buf)
			continue;
		if (!r->len) {
			snprintf(r->error, sizeof(r->error), "%s: empty (no trace was recorded)",
				 r->trace->file);
			continue;
		}
		make_segments(c, r);
		if (r->nr_segs)
			check_cut(c, r);
		if (r->first_tsc && (!c->timed || r->first_tsc < c->t0)) {
			c->timed = true;
			c->t0 = r->first_tsc;
		}
		w.total += r->nr_segs;
		if (r->nr_segs)
			ok++;
	}
	w.map_trace = calloc(w.total + 1, sizeof(size_t));
	w.map_seg = calloc(w.total + 1, sizeof(size_t));
	w.done = calloc(w.total + 1, sizeof(bool));
	if (!w.map_trace || !w.map_seg || !w.done) {
		fprintf(stderr, "ipttool: out of memory\n");
		exit(2);
	}
	for (i = 0, k = 0; i < c->nr_res; i++)
		for (size_t s = 0; s < c->res[i].nr_segs; s++, k++) {
			w.map_trace[k] = i;
			w.map_seg[k] = s;
		}
	if (!jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		jobs = n > 0 ? (unsigned int)n : 1;
	}
	if (jobs > w.total)
		jobs = w.total ? (unsigned int)w.total : 1;
	w.window = 4 * (size_t)jobs;
	if (o)
		rd = dec_render_begin(c, o);
	/* the instruction decoder's "blocks" are single instructions: no gain */
	c->profile_only = rd && o->f[OUT_PROFILE] && !c->opt.insn_decoder;
	for (i = 0; c->profile_only && i < OUT_NR; i++)
		if (i != OUT_PROFILE && o->f[i])
			c->profile_only = false;
	c->count_only = (!rd || c->profile_only) && !c->opt.insn_decoder;
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	w.rd = rd;
	w.o = o;
	/*
	 * Segments are decoded on @jobs threads of their own, -J 1 too, and
	 * made to converge and rendered on one more (the orderer), all with
	 * big stacks; if no thread can be made, this one does it all.
	 */
	th = calloc(jobs + 1, sizeof(*th));
	w.iscs = calloc(jobs + 1, sizeof(*w.iscs));
	if (th && w.iscs && !pthread_attr_init(&attr)) {
		pthread_attr_setstacksize(&attr, DEC_STACK);
		w.own_iscache = own_iscaches_fit(c, jobs);
		for (j = 0; j < jobs; j++)
			if (pthread_create(&th[j + 1], &attr, worker, &w))
				break;
		w.jobs = j;
		if (j)
			have_orderer = !pthread_create(&th[0], &attr, orderer, &w);
		pthread_attr_destroy(&attr);
	}
	if (!have_orderer)
		orderer(&w);
	else
		pthread_join(th[0], NULL);
	dec_render_end(rd);
	for (j = 0; j < w.jobs; j++)
		pthread_join(th[j + 1], NULL);
	for (j = 0; j < w.nr_iscs; j++)
		pt_iscache_free(w.iscs[j]);
	free(w.iscs);
	free(th);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
	free(w.map_trace);
	free(w.map_seg);
	free(w.done);
	if (!ok) {
		snprintf(msg, len, "%s", c->nr_res ? c->res[0].error :
			 "no trace to decode (give --pt FILE or a directory)");
		return -1;
	}
	return 0;
}

void dec_close(struct dec_ctx *c)
{
	size_t i, k;

	for (i = 0; i < c->nr_res; i++) {
		for (k = 0; k < c->res[i].nr_segs; k++) {
			free(c->res[i].segs[k].items);
			free(c->res[i].segs[k].ck);
			dec_live_free(c->res[i].segs[k].live);
			dec_prof_free(c->res[i].segs[k].prof);
		}
		free(c->res[i].segs);
		free(c->res[i].buf);
		free(c->res[i].gap_items);
		dec_live_free(c->res[i].live);
	}
	free(c->res);
	free(c->isids);
	for (int q = 0; c->code && q < c->nr_code; q++)
		if (c->code[q].map)
			munmap(c->code[q].map, c->code[q].maplen);
	free(c->code);
	if (c->iscache)
		pt_iscache_free(c->iscache);
	if (c->syms)
		dec_syms_free(c->syms);
	memset(c, 0, sizeof(*c));
}

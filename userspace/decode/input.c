// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode, inputs: what to decode (traces, images, CPU, timing) from
 * ptxed-style options, a ptgen output directory or an ipt capture
 * directory (its meta.json; the sideband is sideband.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <dirent.h>
#endif

#include "decode.h"
#include "internal.h"

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
	in->warnings = dec_xrealloc(in->warnings, (in->nr_warnings + 1) * sizeof(*in->warnings));
	in->warnings[in->nr_warnings++] = dec_xstrdup(buf);
}

void dec_input_free(struct dec_input *in)
{
	size_t i;

	for (i = 0; i < in->nr_warnings; i++)
		free(in->warnings[i]);
	free(in->warnings);
	for (i = 0; i < in->nr_traces; i++) {
		free(in->traces[i].file);
		free(in->traces[i].sgaps);
	}
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
		free(in->sched[i].tid);
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
	in->traces = dec_xrealloc(in->traces, (in->nr_traces + 1) * sizeof(*in->traces));
	in->traces[in->nr_traces].file = dec_xstrdup(file);
	in->traces[in->nr_traces].cpu = cpu;
	in->traces[in->nr_traces].data = NULL;
	in->traces[in->nr_traces].size = 0;
	in->traces[in->nr_traces].tid = -1;
	in->traces[in->nr_traces].pid = 0;
	in->traces[in->nr_traces].sgaps = NULL;
	in->traces[in->nr_traces].nr_sgaps = 0;
	in->nr_traces++;
	return 0;
}

static struct dec_image *add_image(struct dec_input *in, const char *file, uint64_t off,
				   uint64_t size, uint64_t vaddr)
{
	struct dec_image *im;

	in->images = dec_xrealloc(in->images, (in->nr_images + 1) * sizeof(*in->images));
	im = &in->images[in->nr_images++];
	memset(im, 0, sizeof(*im));
	im->file = dec_xstrdup(file);
	im->offset = off;
	im->size = size;
	im->vaddr = vaddr;
	im->name = dec_xstrdup(base_name(file));
	im->until = UINT64_MAX;
	return im;
}

/*
 * FAMILY/MODEL[/STEPPING], each number as strtol base 0 reads it (decimal,
 * 0x hex), the grammar of libipt's own tools (ptxed --cpu).
 */
int dec_parse_cpu(const char *s, struct pt_cpu *cpu)
{
	unsigned long v[3] = { 0, 0, 0 };
	const unsigned long max[3] = { 0xffff, 0xff, 0xff };
	int n;

	for (n = 0; n < 3; n++) {
		char *end;

		if (*s < '0' || *s > '9')
			return -1;
		errno = 0;
		v[n] = strtoul(s, &end, 0);
		if (errno || v[n] > max[n])
			return -1;
		s = end;
		if (!*s)
			break;
		if (*s != '/' || n == 2)
			return -1;
		s++;
	}
	if (n < 1)
		return -1;
	memset(cpu, 0, sizeof(*cpu));
	cpu->vendor = pcv_intel;
	cpu->family = (uint16_t)v[0];
	cpu->model = (uint8_t)v[1];
	cpu->stepping = (uint8_t)v[2];
	return 0;
}

/*
 * This machine's CPU (CPUID leaf 0's vendor, leaf 1's signature: Intel
 * SDM Vol. 2A, CPUID, "Returns Family/Model/Stepping"; the extended
 * family counts only for family 0xf, the extended model for 6 and 0xf).
 * 0, or -1 when it is not an Intel CPU (or not x86).
 */
int dec_host_cpu(struct pt_cpu *cpu)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d, fam, mod;

	if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x756e6547 || d != 0x49656e69 ||
	    c != 0x6c65746e || a < 1 || !__get_cpuid(1, &a, &b, &c, &d))
		return -1;	/* not "GenuineIntel" */
	fam = (a >> 8) & 0xf;
	mod = (a >> 4) & 0xf;
	if (fam == 6 || fam == 0xf)
		mod |= ((a >> 16) & 0xf) << 4;
	if (fam == 0xf)
		fam += (a >> 20) & 0xff;
	memset(cpu, 0, sizeof(*cpu));
	cpu->vendor = pcv_intel;
	cpu->family = (uint16_t)fam;
	cpu->model = (uint8_t)mod;
	cpu->stepping = (uint8_t)(a & 0xf);
	return 0;
#else
	(void)cpu;
	return -1;
#endif
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
		file = dec_xstrdup(arg);
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
		im->elf = dec_xstrdup(file);
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
	in->fds = dec_xrealloc(in->fds, (in->nr_fds + 1) * sizeof(*in->fds));
	in->fds[in->nr_fds++] = out;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", out);
	im = add_image(in, path, 0, size, stext);
	free(im->name);
	im->name = dec_xstrdup("[kernel.kallsyms]");
	im->kallsyms = dec_xstrdup(kallsyms);
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
		im->name = dec_xrealloc(NULL, strlen(name) + 3);
		sprintf(im->name, "[%s]", name);
		im->kallsyms = dec_xstrdup(kallsyms);
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

/*
 * ptxed's file suffix "FROM" or "FROM-TO" (numbers as strtoull base 0
 * reads them): 1 (an offset), 2 (a range), 0 (not one: the colon is part
 * of the file name, as ptxed takes it), -1 (a range that ends before it
 * begins).
 */
int dec_parse_range(const char *s, uint64_t *from, uint64_t *to)
{
	const char *dash = strchr(s, '-');
	char a[32];

	if (!dash)
		return parse_u64(s, from) ? 0 : 1;
	if (dash == s || (size_t)(dash - s) >= sizeof(a))
		return 0;
	snprintf(a, sizeof(a), "%.*s", (int)(dash - s), s);
	if (parse_u64(a, from) || parse_u64(dash + 1, to))
		return 0;
	return *to > *from ? 2 : -1;
}

int dec_input_add_raw(struct dec_input *in, const char *arg, char *msg, size_t len)
{
	uint64_t base, off = 0, size = 0, from, to;
	char *file = NULL, *rest = NULL, *c;
	struct stat st;
	struct dec_image *im;
	int r;

	if (split_num(arg, &rest, &base)) {
		snprintf(msg, len, "--raw %s: want FILE:BASE, FILE:FROM:BASE, FILE:FROM-TO:BASE "
			 "(ptxed's) or FILE:OFFSET:SIZE:BASE", arg);
		return -1;
	}
	/*
	 * What precedes BASE: FILE, FILE:FROM (from file offset FROM to the
	 * end), FILE:FROM-TO (ptxed's range: [FROM, TO) of the file) or
	 * FILE:OFFSET:SIZE.
	 */
	c = strrchr(rest, ':');
	r = c ? dec_parse_range(c + 1, &from, &to) : 0;
	if (r < 0) {
		snprintf(msg, len, "--raw %s: the range %s ends before it begins: want FROM-TO "
			 "with TO > FROM", arg, c + 1);
		free(rest);
		return -1;
	}
	if (r == 2) {
		file = strndup(rest, (size_t)(c - rest));
		off = from;
		size = to - from;
	} else if (r == 1) {
		char *f2 = NULL;

		if (!split_num(rest, &f2, &size) && !split_num(f2, &file, &off)) {
			free(f2);	/* FILE:OFFSET:SIZE */
		} else {
			free(f2);
			file = strndup(rest, (size_t)(c - rest));
			off = from;
			size = 0;	/* to the end */
		}
	} else {
		file = dec_xstrdup(rest);
	}
	free(rest);
	if (!file) {
		snprintf(msg, len, "--raw %s: out of memory", arg);
		return -1;
	}
	errno = 0;
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
			im->elf = dec_xstrdup(file);
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
		in->comms = dec_xrealloc(in->comms, (in->nr_comms + 1) * sizeof(*in->comms));
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
				im->elf = dec_xstrdup(mpath);
				im->elf_off = off;
				free(im->name);
				im->name = dec_xstrdup(base_name(mpath));
			} else if (mpath[0] == '[') {
				im->elf = dec_xstrdup(im->file);	/* the vDSO dump is an ELF image */
				im->elf_off = 0;
				free(im->name);
				im->name = dec_xstrdup(mpath);
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
		MF("write_error", M_STR_NULL), MF("suspended", M_BOOL),
		MI("missed", M_INT, 0, INT64_MAX), MI("busy", M_INT, 0, INT64_MAX),
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
		else if (jget_int(t, "bytes_lost", 0) > 0)
			dec_input_warn(in, "%s: %" PRId64 " bytes were overwritten before they were "
				       "saved", file, jget_int(t, "bytes_lost", 0));
		if (jget_int(t, "suspended", 0))
			dec_input_warn(in, "%s: the system suspended while tracing: the trace has a "
				       "gap there", file);
		if (jget_int(t, "missed", 0) > 0)
			dec_input_warn(in, "%s: %" PRId64 " thread(s) it created were not traced (every "
				       "trace was in use: record with more --threads)", file,
				       jget_int(t, "missed", 0));
		if (jget_int(t, "busy", 0) > 0)
			dec_input_warn(in, "%s: %" PRId64 " time(s) another tracer owned the CPU's unit "
				       "when the thread ran: its trace has that many gaps", file,
				       jget_int(t, "busy", 0));
		if (jget_int(t, "stopped_full", 0) || (loss && !strcmp(loss, "truncated")))
			dec_input_warn(in, "%s: the buffer filled and the unit stopped: what ran "
				       "after that is not in the trace", file);
		if (json_object_object_get_ex(t, "gaps", &v) && v &&
		    json_object_is_type(v, json_type_array) &&
		    (json_object_array_length(v) || jget_int(t, "gaps_unlisted", 0))) {
			int64_t unlisted = jget_int(t, "gaps_unlisted", 0);
			char more[96] = "";

			if (unlisted)
				snprintf(more, sizeof(more), ", %" PRId64 " not itemised (no place: "
					 "the decode reads across them)", unlisted);
			dec_input_warn(in, "%s: %zu stream gap(s)%s: the unit paused while the "
				       "recording fell behind; what ran then is not in the trace",
				       file, json_object_array_length(v) + (size_t)unlisted, more);
		}
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

/*
 * DIR/elf-images.txt (Documentation/capture-format.rst): ELF files whose
 * code the sideband does not know (a program replayed by the simulated
 * unit, as the demo's), one per line "PATH BASE", PATH relative to the
 * capture directory unless absolute, loaded as --elf PATH:BASE would be.
 * 0 (also without the file), or -1 with @msg.
 */
static int capture_elf_images(struct dec_input *in, const char *dir, char *msg, size_t len)
{
	char path[PATH_MAX], line[PATH_MAX + 64], arg[2 * PATH_MAX + 64], file[PATH_MAX];
	unsigned long long base;
	unsigned int nr = 0;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/elf-images.txt", dir);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : (snprintf(msg, len, "%s: %s", path, strerror(errno)), -1);
	while (!ret && fgets(line, sizeof(line), f)) {
		char extra;

		nr++;
		if (line[0] == '#' || line[strspn(line, " \t\n")] == 0)
			continue;
		if (sscanf(line, "%4095s %llx %c", file, &base, &extra) != 2) {
			snprintf(msg, len, "%s: line %u: want \"PATH BASE\" (BASE in hex)", path, nr);
			ret = -1;
			break;
		}
		snprintf(arg, sizeof(arg), "%s%s%s:%#llx", file[0] == '/' ? "" : dir,
			 file[0] == '/' ? "" : "/", file, base);
		if (dec_input_add_elf(in, arg, msg, len)) {
			char m[512];

			snprintf(m, sizeof(m), "%s", msg);
			snprintf(msg, len, "%s: line %u: %s", path, nr, m);
			ret = -1;
		}
	}
	fclose(f);
	return ret;
}

/* An unsigned JSON integer at @k of @o: 0, 1 when null (and @null_ok), -1 if not one. */
static int jget_u64(struct json_object *o, const char *k, bool null_ok, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v))
		return -1;
	if (!v)
		return null_ok ? 1 : -1;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return -1;
	*out = json_object_get_uint64(v);
	return 0;
}

/*
 * A streamed capture's traces[@i].gaps (Documentation/capture-format.rst,
 * "Streamed captures") into @tr, in offset order.  0, or -1 with @msg
 * naming the field: gaps out of order, two at one offset, a tsc_end
 * before its tsc_start, an offset past the end of the trace's file.
 */
static int load_sgaps(struct dec_trace *tr, struct json_object *t, size_t i, const char *path,
		      char *msg, size_t len)
{
	struct json_object *gaps;
	bool have_size = false;
	uint64_t size = 0;
	struct stat st;
	size_t k, n;

	if (!json_object_object_get_ex(t, "gaps", &gaps) || !gaps)
		return 0;
	if (!json_object_is_type(gaps, json_type_array)) {
		snprintf(msg, len, "%s: \"traces[%zu].gaps\" is not an array", path, i);
		return -1;
	}
	n = json_object_array_length(gaps);
	if (n && !stat(tr->file, &st)) {
		have_size = true;
		size = (uint64_t)st.st_size;
	}
	tr->sgaps = n ? dec_xrealloc(NULL, n * sizeof(*tr->sgaps)) : NULL;
	for (k = 0; k < n; k++) {
		struct json_object *g = json_object_array_get_idx(gaps, k);
		struct dec_sgap *sg = &tr->sgaps[k];
		int rc;

		if (!json_object_is_type(g, json_type_object) || jget_u64(g, "offset", false, &sg->off) ||
		    jget_u64(g, "tsc_start", false, &sg->tsc_start) ||
		    (rc = jget_u64(g, "tsc_end", true, &sg->tsc_end)) < 0) {
			snprintf(msg, len, "%s: \"traces[%zu].gaps[%zu]\": want an object with "
				 "\"offset\", \"tsc_start\" (integers), \"tsc_end\" and "
				 "\"bytes_lost\" (integers or null)", path, i, k);
			return -1;
		}
		if (rc)
			sg->tsc_end = 0;
		rc = jget_u64(g, "bytes_lost", true, &sg->lost);
		if (rc < 0) {
			snprintf(msg, len, "%s: \"traces[%zu].gaps[%zu].bytes_lost\": want an integer "
				 "or null", path, i, k);
			return -1;
		}
		if (rc)
			sg->lost = UINT64_MAX;
		if (k && sg->off < tr->sgaps[k - 1].off) {
			snprintf(msg, len, "%s: \"traces[%zu].gaps\" are not in offset order", path, i);
			return -1;
		}
		/* the recorder makes one gap per pause, each after data */
		if (k && sg->off == tr->sgaps[k - 1].off) {
			snprintf(msg, len, "%s: \"traces[%zu].gaps[%zu].offset\": %" PRIu64
				 ", the offset of the gap before it", path, i, k, sg->off);
			return -1;
		}
		if (sg->tsc_end && sg->tsc_end < sg->tsc_start) {
			snprintf(msg, len, "%s: \"traces[%zu].gaps[%zu].tsc_end\": %#" PRIx64
				 " before its tsc_start %#" PRIx64, path, i, k, sg->tsc_end,
				 sg->tsc_start);
			return -1;
		}
		if (have_size && sg->off > size) {
			snprintf(msg, len, "%s: \"traces[%zu].gaps[%zu].offset\": %" PRIu64
				 " is past the end of %s (%" PRIu64 " bytes)", path, i, k, sg->off,
				 tr->file, size);
			return -1;
		}
		tr->nr_sgaps++;
	}
	return 0;
}

/* What ipttool record's first meta.json says until the recording ends. */
#define UNFINISHED "the recording did not finish"

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/*
 * A capture whose recording never finished (killed, power lost) has the
 * meta.json it wrote while recording: the traces that had a file then and
 * their gaps, or none.  Decode the trace files it left ("cpuN.pt",
 * "thread-TID[.N].pt") that meta.json does not list too, with a warning
 * (exit 3).  Gaps the recording did not get to write down are unknown.
 * The number of files.
 */
static size_t load_unfinished(struct dec_input *in, const char *dir)
{
	struct dirent **e = NULL;
	int n = scandir(dir, &e, NULL, by_name), i;
	size_t added = 0;

	for (i = 0; i < n; i++) {
		const char *name = e[i]->d_name;
		unsigned int a, b;
		char tail[8], path[PATH_MAX + 64];
		int cpu = -1;
		long tid = -1;

		if (sscanf(name, "cpu%u%7s", &a, tail) == 2 && !strcmp(tail, ".pt"))
			cpu = (int)a;
		else if ((sscanf(name, "thread-%u%7s", &a, tail) == 2 && !strcmp(tail, ".pt")) ||
			 (sscanf(name, "thread-%u.%u%7s", &a, &b, tail) == 3 && !strcmp(tail, ".pt")))
			tid = (long)a;
		else
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		added++;
		for (size_t k = 0; k < in->nr_traces; k++)
			if (!strcmp(in->traces[k].file, path))
				goto next;	/* listed, with its gaps */
		dec_input_add_trace(in, path, cpu);
		in->traces[in->nr_traces - 1].tid = tid;
next:
		free(e[i]);
	}
	free(e);
	if (added)
		dec_input_warn(in, "%s: the recording did not finish; decoding what it left (%zu "
			       "trace file%s, gaps it did not write down unknown)", dir, added,
			       added == 1 ? "" : "s");
	return added;
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
		if (load_sgaps(&in->traces[in->nr_traces - 1], t, i, path, msg, len))
			goto fail;
	}
	if (json_object_object_get_ex(o, "incomplete_reason", &v) && v &&
	    !strcmp(json_object_get_string(v), UNFINISHED))
		load_unfinished(in, dir);
	{
		struct json_object *mode = NULL, *prog = NULL;

		in->per_thread = json_object_object_get_ex(o, "mode", &mode) && mode &&
				 !strcmp(json_object_get_string(mode), "thread");
		if (json_object_object_get_ex(o, "program", &prog) && prog)
			in->program_pid = (long)jget_int(prog, "pid", 0);
	}
	snprintf(in->kind, sizeof(in->kind), "capture");
	if (capture_elf_images(in, dir, msg, len))
		goto fail;
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

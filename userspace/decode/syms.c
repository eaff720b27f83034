// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: modules and their symbols.  ELF symbol tables are read
 * with elfutils' libdwfl, which also finds separate debug files (by
 * build-id under the debuginfo path, by .gnu_debuglink, in debuginfod's
 * cache) when the mapped file is stripped; PLT entries are named
 * "NAME@plt" from the dynamic relocations.  Everything is read in
 * dec_syms_load(), into one sorted, immutable table per module, and the
 * Dwfl handles are gone before decoding starts: lookups take no lock and
 * may run on every worker at once.
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"

struct rawsym {
	uint64_t addr, size;
	uint64_t sec_end;	/* end of its section (0: unknown) */
	int rank;		/* lower is preferred: global 0, weak 1, local 2; labels +3 */
	bool label;		/* STT_NOTYPE in an executable section */
	char *name;
};

static int cmp_raw(const void *a, const void *b)
{
	const struct rawsym *x = a, *y = b;
	size_t lx, ly;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	lx = strlen(x->name);
	ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_mod(const void *a, const void *b)
{
	const struct dec_module *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* A growing array of raw symbols; false when out of memory. */
struct rawvec {
	struct rawsym *v;
	size_t n, cap;
};

static bool raw_push(struct rawvec *rv, const struct rawsym *r)
{
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 256;
		struct rawsym *v = realloc(rv->v, cap * sizeof(*v));

		if (!v)
			return false;
		rv->v = v;
		rv->cap = cap;
	}
	rv->v[rv->n++] = *r;
	return true;
}

static void raw_free(struct rawvec *rv)
{
	size_t i;

	for (i = 0; i < rv->n; i++)
		free(rv->v[i].name);
	free(rv->v);
	memset(rv, 0, sizeof(*rv));
}

/*
 * Sort @raw (@nraw symbols, names now owned by @m) into @m's table: of
 * several at one address the preferred name and the largest extent; a
 * label inside a sized function is dropped (the function names that
 * code); a symbol without a size ends at the next one or at the end of
 * its section, whichever comes first.  Frees @raw.
 */
static void finish_syms(struct dec_module *m, struct rawsym *raw, size_t nraw)
{
	uint64_t *sec_end = NULL;
	uint64_t covered = 0;	/* end of the sized functions so far */
	size_t i;

	if (nraw)
		qsort(raw, nraw, sizeof(*raw), cmp_raw);
	m->syms = calloc(nraw + 1, sizeof(*m->syms));
	sec_end = calloc(nraw + 1, sizeof(*sec_end));
	if (!sec_end) {
		free(m->syms);
		m->syms = NULL;
	}
	for (i = 0; i < nraw; i++) {
		struct dec_sym *s;
		uint64_t size = raw[i].size;

		if (!m->syms || (m->nr_syms && m->syms[m->nr_syms - 1].start == raw[i].addr)) {
			/* an alias: keep the preferred name, the largest extent */
			if (m->syms) {
				s = &m->syms[m->nr_syms - 1];
				if (size && raw[i].addr + size > s->end)
					s->end = raw[i].addr + size;
				if (!raw[i].label && size && raw[i].addr + size > covered)
					covered = raw[i].addr + size;
			}
			free(raw[i].name);
			continue;
		}
		if (raw[i].label && raw[i].addr < covered) {
			free(raw[i].name);
			continue;
		}
		if (!raw[i].label && size && raw[i].addr + size > covered)
			covered = raw[i].addr + size;
		sec_end[m->nr_syms] = raw[i].sec_end;
		s = &m->syms[m->nr_syms++];
		s->start = raw[i].addr;
		s->end = size ? raw[i].addr + size : 0;
		s->name = raw[i].name;
	}
	for (i = 0; i < m->nr_syms; i++) {
		struct dec_sym *s = &m->syms[i];

		if (s->end)
			continue;
		s->end = i + 1 < m->nr_syms ? m->syms[i + 1].start : m->end;
		if (sec_end[i] > s->start && sec_end[i] < s->end)
			s->end = sec_end[i];
	}
	free(sec_end);
	free(raw);
}

/* ---- ELF files: symbols through libdwfl, PLT entries from relocations ---- */

/*
 * One ELF file's symbols at its own (link-time) addresses, read once per
 * dec_syms_load() however many images map the file.
 */
struct symfile {
	char *path;
	struct rawvec syms;
	char *debugfile;	/* the separate debug file libdwfl found, or NULL */
};

struct symfiles {
	struct symfile *f;
	size_t n;
	Dwfl_Callbacks cbs;
	char *debuginfo_path;	/* what cbs.debuginfo_path points to */
};

static const char *sec_name(Elf *e, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *n = elf_strptr(e, shstrndx, sh->sh_name);

	return n ? n : "";
}

/*
 * The symbol each GOT slot of @e is relocated against (R_X86_64_JUMP_SLOT
 * in .rela.plt, R_X86_64_GLOB_DAT for .plt.got), sorted by slot.
 */
struct gotslot {
	uint64_t slot;
	const char *name;	/* in @e's .dynstr */
};

static int cmp_slot(const void *a, const void *b)
{
	const struct gotslot *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static const char *slot_name(const struct gotslot *g, size_t n, uint64_t slot)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g[mid].slot == slot)
			return g[mid].name;
		if (g[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * "NAME@plt" for each entry of .plt, .plt.sec and .plt.got of x86-64 ELF
 * @e, as objdump and perf name them: each entry jumps through a GOT slot
 * (jmp *disp32(%rip), ff 25, after an endbr64 and a bnd prefix in IBT
 * PLTs), and the relocation of that slot names the function.  The first
 * .plt entry (the resolver call) and entries of a lazy .plt that only
 * push and jump to it (IBT: .plt.sec has the jumps) get no name.
 */
static void plt_syms(Elf *e, struct rawvec *out)
{
	struct gotslot *g = NULL;
	size_t ng = 0, cap = 0, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;

	if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 || elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh, lsh;
		Elf_Scn *dynsym;
		Elf_Data *data, *symdata;
		size_t k, cnt;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		dynsym = elf_getscn(e, sh.sh_link);
		if (!dynsym || !gelf_getshdr(dynsym, &lsh) || lsh.sh_type != SHT_DYNSYM)
			continue;
		data = elf_getdata(scn, NULL);
		symdata = elf_getdata(dynsym, NULL);
		if (!data || !symdata)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (k = 0; k < cnt; k++) {
			GElf_Rela rela;
			GElf_Sym sym;
			const char *name;
			unsigned long type;

			if (!gelf_getrela(data, (int)k, &rela))
				continue;
			type = GELF_R_TYPE(rela.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
			    !GELF_R_SYM(rela.r_info) ||
			    !gelf_getsym(symdata, (int)GELF_R_SYM(rela.r_info), &sym))
				continue;
			name = elf_strptr(e, lsh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (ng == cap) {
				struct gotslot *n2;

				cap = cap ? cap * 2 : 64;
				n2 = realloc(g, cap * sizeof(*g));
				if (!n2)
					goto out;
				g = n2;
			}
			g[ng].slot = rela.r_offset;
			g[ng++].name = name;
		}
	}
	if (!ng)
		goto out;
	qsort(g, ng, sizeof(*g), cmp_slot);
	scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *sn;
		const uint8_t *b;
		Elf_Data *data;
		uint64_t ent, off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		sn = sec_name(e, shstrndx, &sh);
		if (strcmp(sn, ".plt") && strcmp(sn, ".plt.sec") && strcmp(sn, ".plt.got"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size < sh.sh_size)
			continue;
		b = data->d_buf;
		ent = sh.sh_entsize >= 8 && sh.sh_entsize <= 32 ? sh.sh_entsize : 16;
		for (off = 0; off + ent <= sh.sh_size; off += ent) {
			uint64_t k;

			for (k = 0; k + 6 <= ent; k++) {
				const char *name;
				struct rawsym r = { 0 };
				int32_t disp;
				size_t len;

				if (b[off + k] != 0xff || b[off + k + 1] != 0x25)
					continue;
				memcpy(&disp, b + off + k + 2, sizeof(disp));
				name = slot_name(g, ng, sh.sh_addr + off + k + 6 + (uint64_t)(int64_t)disp);
				if (!name)
					break;
				len = strlen(name) + sizeof("@plt");
				r.name = malloc(len);
				if (!r.name)
					goto out;
				snprintf(r.name, len, "%s@plt", name);
				r.addr = sh.sh_addr + off;
				r.size = ent;
				r.sec_end = sh.sh_addr + sh.sh_size;
				if (!raw_push(out, &r)) {
					free(r.name);
					goto out;
				}
				break;
			}
		}
	}
out:
	free(g);
}

/* Is @name a symbol that names no code: a mapping symbol ($x, $d) or a local label (.L)? */
static bool junk_name(const char *name)
{
	return !*name || *name == '$' || !strncmp(name, ".L", 2);
}

/*
 * Read @path's symbols into @f with libdwfl: the file's own .symtab, or,
 * for a stripped file, the separate debug file's (found by build-id,
 * .gnu_debuglink or debuginfod's cache by dwfl_standard_find_debuginfo),
 * .dynsym otherwise; function symbols (STT_FUNC, STT_GNU_IFUNC) and
 * labels (STT_NOTYPE) in executable sections, except mapping symbols and
 * local labels.  Then the PLT entries of @path.
 */
static void symfile_read(struct symfiles *fs, struct symfile *f)
{
	Dwfl *d = dwfl_begin(&fs->cbs);
	Dwfl_Module *dm;
	GElf_Addr mbias = 0;
	const char *debugfile = NULL;
	Elf *main_elf;
	int i, n;

	if (!d)
		return;
	dwfl_report_begin(d);
	dm = dwfl_report_elf(d, f->path, f->path, -1, 0, true);
	dwfl_report_end(d, NULL, NULL);
	if (!dm)
		goto out;
	main_elf = dwfl_module_getelf(dm, &mbias);
	if (!main_elf)
		goto out;
	n = dwfl_module_getsymtab(dm);
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		GElf_Shdr sh;
		Elf_Scn *scn;
		Elf *elf = NULL;
		Dwarf_Addr bias;
		struct rawsym r = { 0 };
		const char *name = dwfl_module_getsym_info(dm, i, &sym, &addr, &shndx, &elf, &bias);
		int type;

		if (!name || junk_name(name) || sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS ||
		    !elf)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		scn = elf_getscn(elf, shndx);
		if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (type == STT_NOTYPE && !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (!sym.st_value && type == STT_NOTYPE)
			continue;
		r.addr = addr - mbias;
		r.size = sym.st_size;
		r.label = type == STT_NOTYPE;
		r.sec_end = sh.sh_addr + sh.sh_size + (uint64_t)bias - mbias;
		r.rank = (GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 0 :
			  GELF_ST_BIND(sym.st_info) == STB_WEAK ? 1 : 2) + (r.label ? 3 : 0);
		r.name = strdup(name);
		if (!r.name || !raw_push(&f->syms, &r)) {
			free(r.name);
			goto out;
		}
	}
	plt_syms(main_elf, &f->syms);
	if (dwfl_module_info(dm, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile) && debugfile &&
	    strcmp(debugfile, f->path))
		f->debugfile = strdup(debugfile);
out:
	dwfl_end(d);
}

static struct symfile *symfile_get(struct symfiles *fs, const char *path)
{
	struct symfile *f;
	size_t i;

	for (i = 0; i < fs->n; i++)
		if (!strcmp(fs->f[i].path, path))
			return &fs->f[i];
	f = realloc(fs->f, (fs->n + 1) * sizeof(*f));
	if (!f)
		return NULL;
	fs->f = f;
	f = &fs->f[fs->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	fs->n++;
	symfile_read(fs, f);
	return f;
}

static void symfiles_free(struct symfiles *fs)
{
	size_t i;

	for (i = 0; i < fs->n; i++) {
		raw_free(&fs->f[i].syms);
		free(fs->f[i].path);
		free(fs->f[i].debugfile);
	}
	free(fs->f);
	free(fs->debuginfo_path);
}

/*
 * Place @path's symbols into @m, with @elf_off the file offset mapped at
 * @m->start: the PT_LOAD segment holding it gives the bias between
 * runtime and ELF addresses.  Of several symbols at one address a
 * function beats a label, then the global one wins, then the weak one,
 * then the shortest name, then the alphabetically first.
 */
static void load_elf_syms(struct symfiles *fs, struct dec_module *m, const char *path,
			  uint64_t elf_off)
{
	struct rawvec rv = { 0 };
	const struct symfile *f;
	size_t i, n;
	bool have_bias = false;
	GElf_Ehdr eh;
	Elf *e;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) || elf_getphdrnum(e, &n))
		goto out;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    elf_off >= ph.p_offset && elf_off < ph.p_offset + ph.p_filesz) {
			m->bias = m->start - (ph.p_vaddr + (elf_off - ph.p_offset));
			have_bias = true;
			break;
		}
	}
	if (!have_bias)
		goto out;
	{
		uint64_t minv = UINT64_MAX;

		for (i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < minv)
				minv = ph.p_vaddr & ~(uint64_t)0xfff;
		}
		if (minv != UINT64_MAX && minv + m->bias <= m->start)
			m->load_base = minv + m->bias;
	}
	f = symfile_get(fs, path);
	if (!f)
		goto out;
	if (f->debugfile) {
		free(m->debug_elf);
		m->debug_elf = strdup(f->debugfile);	/* --lines: its DWARF */
	}
	for (i = 0; i < f->syms.n; i++) {
		struct rawsym r = f->syms.v[i];

		r.addr += m->bias;
		if (r.addr < m->start || r.addr >= m->end)
			continue;
		if (r.sec_end)
			r.sec_end += m->bias;
		r.name = strdup(r.name);
		if (!r.name || !raw_push(&rv, &r)) {
			free(r.name);
			goto out;
		}
	}
	finish_syms(m, rv.v, rv.n);
	rv.v = NULL;
	rv.n = 0;
out:
	raw_free(&rv);
	if (e)
		elf_end(e);
	close(fd);
}

/*
 * The text symbols of a /proc/kallsyms-format file inside @m (the kernel's
 * own, not modules'): no sizes there, so each ends at the next.  T ranks
 * as global, W as weak, t as local.
 */
static void load_kallsyms(struct dec_module *m, const char *path)
{
	struct rawsym *raw = NULL;
	size_t nraw = 0, cap = 0;
	char line[512], name[256], type;
	unsigned long long a;
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || strchr(line, '[') ||
		    !type || !strchr("TtWw", type) || a < m->start || a >= m->end)
			continue;
		if (nraw == cap) {
			struct rawsym *n;

			cap = cap ? cap * 2 : 4096;
			n = realloc(raw, cap * sizeof(*raw));
			if (!n)
				break;
			raw = n;
		}
		memset(&raw[nraw], 0, sizeof(raw[nraw]));
		raw[nraw].addr = a;
		raw[nraw].rank = type == 'T' ? 0 : type == 'W' || type == 'w' ? 1 : 2;
		raw[nraw].name = strdup(name);
		if (!raw[nraw].name)
			break;
		nraw++;
	}
	fclose(f);
	finish_syms(m, raw, nraw);
}

struct dec_syms *dec_syms_load(const struct dec_input *in)
{
	struct dec_syms *s = calloc(1, sizeof(*s));
	struct symfiles fs = {
		.cbs = {
			.find_elf = dwfl_build_id_find_elf,
			.find_debuginfo = dwfl_standard_find_debuginfo,
			.section_address = dwfl_offline_section_address,
		},
	};
	size_t i;

	if (!s)
		return NULL;
	s->mods = calloc(in->nr_images + 1, sizeof(*s->mods));
	if (!s->mods)
		return s;
	if (in->debuginfo_path) {
		fs.debuginfo_path = strdup(in->debuginfo_path);
		fs.cbs.debuginfo_path = &fs.debuginfo_path;
	}
	for (i = 0; i < in->nr_images; i++) {
		const struct dec_image *im = &in->images[i];
		struct dec_module *m = &s->mods[s->nr_mods++];

		m->start = im->vaddr;
		m->end = im->vaddr + im->size;
		m->name = strdup(im->name);
		m->path = strdup(im->elf ? im->elf : im->file);
		m->bias = im->vaddr - im->offset;
		m->load_base = im->vaddr;
		m->pid = im->pid;
		m->from = im->from;
		m->until = im->until;
		m->dwarf_fd = -1;
		if (im->elf) {
			m->elf = strdup(im->elf);
			load_elf_syms(&fs, m, im->elf, im->elf_off);
		} else if (im->kallsyms) {
			load_kallsyms(m, im->kallsyms);
		}
	}
	symfiles_free(&fs);
	if (s->nr_mods)
		qsort(s->mods, s->nr_mods, sizeof(*s->mods), cmp_mod);
	return s;
}

void dec_syms_free(struct dec_syms *s)
{
	size_t i, k;

	for (i = 0; i < s->nr_mods; i++) {
		for (k = 0; k < s->mods[i].nr_syms; k++)
			free((char *)s->mods[i].syms[k].name);
		free(s->mods[i].syms);
		if (s->mods[i].dwarf)
			dwarf_end(s->mods[i].dwarf);
		if (s->mods[i].dwarf_fd >= 0)
			close(s->mods[i].dwarf_fd);
		free(s->mods[i].elf);
		free(s->mods[i].debug_elf);
		free(s->mods[i].name);
		free(s->mods[i].path);
	}
	free(s->mods);
	free(s);
}

const struct dec_module *dec_syms_module_at(const struct dec_syms *s, uint64_t ip, long pid,
					    uint64_t time)
{
	size_t lo = 0, hi, best = SIZE_MAX;

	if (!s)
		return NULL;
	hi = s->nr_mods;
	/* Later dumps of the same range win: take the last module starting <= ip. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->mods[mid].start <= ip) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	while (best != SIZE_MAX) {
		const struct dec_module *m = &s->mods[best];

		if (ip < m->end && (!m->pid || !pid || m->pid == pid) &&
		    (time ? m->from <= time && time < m->until : m->until == UINT64_MAX))
			return m;
		if (!best)
			break;
		best--;
	}
	return NULL;
}

const struct dec_sym *dec_syms_find(const struct dec_module *m, uint64_t ip)
{
	size_t lo = 0, hi;

	if (!m || !m->nr_syms)
		return NULL;
	hi = m->nr_syms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || ip >= m->syms[lo - 1].end)
		return NULL;
	return &m->syms[lo - 1];
}

const char *dec_syms_line(struct dec_syms *s, uint64_t ip, long pid, uint64_t time, char *buf,
			  size_t len)
{
	struct dec_module *m = (struct dec_module *)dec_syms_module_at(s, ip, pid, time);
	Dwarf_Die cu;
	Dwarf_Line *line;
	const char *src, *base;
	int lineno;

	if (!m || !m->elf || m->dwarf_fd == -2)
		return NULL;
	if (m->dwarf_fd == -1) {
		m->dwarf_fd = open(m->debug_elf ? m->debug_elf : m->elf, O_RDONLY);
		m->dwarf = m->dwarf_fd >= 0 ? dwarf_begin(m->dwarf_fd, DWARF_C_READ) : NULL;
		if (!m->dwarf) {
			if (m->dwarf_fd >= 0)
				close(m->dwarf_fd);
			m->dwarf_fd = -2;
			return NULL;
		}
	}
	if (!dwarf_addrdie(m->dwarf, ip - m->bias, &cu))
		return NULL;
	line = dwarf_getsrc_die(&cu, ip - m->bias);
	if (!line || dwarf_lineno(line, &lineno) || !(src = dwarf_linesrc(line, NULL, NULL)))
		return NULL;
	base = strrchr(src, '/');
	snprintf(buf, len, "%s:%d", base ? base + 1 : src, lineno);
	return buf;
}

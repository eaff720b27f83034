// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: modules and function symbols from ELF symbol tables
 * (.symtab and .dynsym) with libelf.
 */
#include <elfutils/libdw.h>
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
	int rank;		/* lower is preferred: global 0, weak 1, local 2 */
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

/*
 * Sort @raw (@nraw symbols, names now owned by @m) into @m's table: of
 * several at one address the preferred name and the largest extent; a
 * symbol without a size ends at the next one.  Frees @raw.
 */
static void finish_syms(struct dec_module *m, struct rawsym *raw, size_t nraw)
{
	size_t i;

	if (nraw)
		qsort(raw, nraw, sizeof(*raw), cmp_raw);
	m->syms = calloc(nraw + 1, sizeof(*m->syms));
	for (i = 0; i < nraw; i++) {
		struct dec_sym *s;
		uint64_t size = raw[i].size;

		if (!m->syms || (m->nr_syms && m->syms[m->nr_syms - 1].start == raw[i].addr)) {
			/* an alias: keep the preferred name, the largest extent */
			if (m->syms) {
				s = &m->syms[m->nr_syms - 1];
				if (size && raw[i].addr + size > s->end)
					s->end = raw[i].addr + size;
			}
			free(raw[i].name);
			continue;
		}
		s = &m->syms[m->nr_syms++];
		s->start = raw[i].addr;
		s->end = size ? raw[i].addr + size : 0;
		s->name = raw[i].name;
	}
	for (i = 0; i < m->nr_syms; i++)
		if (!m->syms[i].end)
			m->syms[i].end = i + 1 < m->nr_syms ? m->syms[i + 1].start : m->end;
	free(raw);
}

/*
 * Read the function symbols of @path into @m, with @bias the difference
 * between runtime and ELF addresses.  Of several symbols at one address the
 * global one wins, then the weak one, then the shortest name, then the
 * alphabetically first.  A symbol's end is its size, or, without a size,
 * the next symbol.
 */
static void load_elf_syms(struct dec_module *m, const char *path, uint64_t elf_off)
{
	struct rawsym *raw = NULL;
	size_t nraw = 0, cap = 0, i, n;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	bool have_bias = false;
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
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t k, cnt;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (k = 0; k < cnt; k++) {
			GElf_Sym sym;
			const char *name;
			int type;

			if (!gelf_getsym(data, (int)k, &sym))
				continue;
			type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
			    !sym.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (sym.st_value + m->bias < m->start || sym.st_value + m->bias >= m->end)
				continue;
			if (nraw == cap) {
				cap = cap ? cap * 2 : 256;
				raw = realloc(raw, cap * sizeof(*raw));
				if (!raw)
					goto out;
			}
			raw[nraw].addr = sym.st_value + m->bias;
			raw[nraw].size = sym.st_size;
			raw[nraw].rank = GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 0 :
					 GELF_ST_BIND(sym.st_info) == STB_WEAK ? 1 : 2;
			raw[nraw].name = strdup(name);
			if (!raw[nraw].name)
				goto out;
			nraw++;
		}
	}
	finish_syms(m, raw, nraw);
	raw = NULL;
out:
	free(raw);
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
		raw[nraw].addr = a;
		raw[nraw].size = 0;
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
	size_t i;

	if (!s)
		return NULL;
	s->mods = calloc(in->nr_images + 1, sizeof(*s->mods));
	if (!s->mods)
		return s;
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
			load_elf_syms(m, im->elf, im->elf_off);
			m->elf = strdup(im->elf);
		} else if (im->kallsyms) {
			load_kallsyms(m, im->kallsyms);
		}
	}
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
		free(s->mods[i].name);
		free(s->mods[i].path);
	}
	free(s->mods);
	free(s);
}

const struct dec_module *dec_syms_module(const struct dec_syms *s, uint64_t ip)
{
	return s ? dec_syms_module_at(s, ip, s->cur_pid, s->cur_time) : NULL;
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

const char *dec_syms_fmt(const struct dec_syms *s, uint64_t ip, char *buf, size_t len)
{
	const struct dec_module *m = dec_syms_module(s, ip);
	const struct dec_sym *y = dec_syms_find(m, ip);

	if (y)
		snprintf(buf, len, "%s+%#" PRIx64, y->name, ip - y->start);
	else if (m)
		snprintf(buf, len, "%s+%#" PRIx64, m->name, ip - m->bias);
	else
		snprintf(buf, len, "%#" PRIx64, ip);
	return buf;
}

const char *dec_syms_line(struct dec_syms *s, uint64_t ip, char *buf, size_t len)
{
	struct dec_module *m = (struct dec_module *)dec_syms_module(s, ip);
	Dwarf_Die cu;
	Dwarf_Line *line;
	const char *src, *base;
	int lineno;

	if (!m || !m->elf || m->dwarf_fd == -2)
		return NULL;
	if (m->dwarf_fd == -1) {
		m->dwarf_fd = open(m->elf, O_RDONLY);
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

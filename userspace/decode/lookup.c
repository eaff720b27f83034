// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: stateless symbol lookups (internal.h), over syms.c's
 * public functions.
 */
#include <inttypes.h>
#include <stdio.h>

#include "decode.h"
#include "internal.h"

void dec_symc_reset(struct dec_symc *sc)
{
	sc->start = 1;
	sc->end = 0;
}

/* Look @ip up in process @pid's code at perf time @time, unless @sc holds it. */
void dec_symc_lookup(struct dec_symc *sc, const struct dec_syms *s, uint64_t ip, long pid,
		     uint64_t time)
{
	if (ip >= sc->start && ip < sc->end)
		return;
	sc->mod = dec_syms_module_at(s, ip, pid, time);
	sc->sym = dec_syms_find(sc->mod, ip);
	if (sc->sym) {
		/* valid up to the symbol's end, the next symbol, the module's end */
		const struct dec_sym *next = sc->sym + 1;

		sc->start = sc->sym->start;
		sc->end = sc->sym->end;
		if (next < sc->mod->syms + sc->mod->nr_syms && next->start < sc->end)
			sc->end = next->start;
		if (sc->mod->end < sc->end)
			sc->end = sc->mod->end;
	} else {
		/* no cache for unknown code */
		dec_symc_reset(sc);
	}
}

/*
 * Does block @b, looked up at its start, lie in the one function @sc holds
 * (or in a module without symbols, all of it one "[no symbol]")?
 */
bool dec_symc_holds(const struct dec_symc *sc, const struct dec_item *b)
{
	if (sc->sym)
		return b->end_ip < sc->end;
	return sc->mod && !sc->mod->nr_syms && b->end_ip < sc->mod->end;
}

const char *dec_sym_fmt_at(const struct dec_syms *s, uint64_t ip, long pid, uint64_t time,
			   char *buf, size_t len)
{
	const struct dec_module *m = s ? dec_syms_module_at(s, ip, pid, time) : NULL;
	const struct dec_sym *y = dec_syms_find(m, ip);

	if (y)
		snprintf(buf, len, "%s+%#" PRIx64, y->name, ip - y->start);
	else if (m)
		snprintf(buf, len, "%s+%#" PRIx64, m->name, ip - m->bias);
	else
		snprintf(buf, len, "%#" PRIx64, ip);
	return buf;
}

const char *dec_sym_line_at(struct dec_syms *s, uint64_t ip, long pid, uint64_t time,
			    char *buf, size_t len)
{
	return s ? dec_syms_line(s, ip, pid, time, buf, len) : NULL;
}

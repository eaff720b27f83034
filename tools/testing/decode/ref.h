/* SPDX-License-Identifier: GPL-2.0 */
/* The reference decode (ref.c). */
#ifndef IPT_DECODE_REF_H
#define IPT_DECODE_REF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <intel-pt.h>

struct ref_code {
	const char *file;	/* for libipt */
	uint64_t offset, size, vaddr;
	const uint8_t *bytes;	/* the same bytes, for Zydis */
};

/*
 * Decode @buf[0..@len) serially (@insn_flavour: libipt's instruction
 * decoder, else its block decoder) against @code, printing to @out what
 * 'ipttool decode --insn' prints without symbols, headed "[trace @name]"
 * and ended by "# instructions N errors M".  0, or -1 (libipt failed).
 */
int ref_decode(const uint8_t *buf, size_t len, const struct pt_cpu *cpu, const struct ref_code *code,
	       size_t nr_code, bool insn_flavour, const char *name, FILE *out, uint64_t *insns,
	       uint64_t *errors);

#endif

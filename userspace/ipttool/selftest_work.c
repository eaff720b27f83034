// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool selftest: the bundled program, and what it does by construction.
 *
 * The program is written in assembly so that its instructions and branches
 * are exactly these whatever the compiler: the ground truth is known
 * without a tracer.  ipt_st_call(n) (n >= 1) calls ipt_st_work(n):
 *
 *	ipt_st_work:	xor  %ecx,%ecx
 *	1:		inc  %ecx
 *			test $1,%cl
 *			jnz  2f		A: taken when i is odd
 *			nop
 *	2:		cmp  %edi,%ecx
 *			jb   1b		B: taken while i < n
 *			ret
 *
 * Iteration i (1..n) runs inc, test, jnz, the nop when i is even, cmp and
 * jb: 2 + 5n + n/2 instructions with the xor and the ret, and 2n
 * conditional branches, A then B of each iteration.  Nothing in
 * [ipt_st_work, ipt_st_work_end) calls out or touches memory, so an
 * address filter on that range isolates it on any CPU.
 */
#include "ipttool.h"

__asm__(
	"	.pushsection .text\n"
	"	.globl ipt_st_call\n"
	"	.type ipt_st_call, @function\n"
	"	.p2align 4\n"
	"ipt_st_call:\n"
	"	call ipt_st_work\n"
	"	.globl ipt_st_after\n"
	"ipt_st_after:\n"
	"	ret\n"
	"	.size ipt_st_call, . - ipt_st_call\n"
	"	.globl ipt_st_work\n"
	"	.type ipt_st_work, @function\n"
	"	.p2align 4\n"
	"ipt_st_work:\n"
	"	xor %ecx, %ecx\n"
	"1:	inc %ecx\n"
	"	test $1, %cl\n"
	"	jnz 2f\n"
	"	nop\n"
	"2:	cmp %edi, %ecx\n"
	"	jb 1b\n"
	"	ret\n"
	"	.globl ipt_st_work_end\n"
	"ipt_st_work_end:\n"
	"	.size ipt_st_work, . - ipt_st_work\n"
	"	.popsection\n");

uint64_t selftest_expected_insns(unsigned int n)
{
	return 2 + 5ull * n + n / 2;
}

uint64_t selftest_expected_branches(unsigned int n)
{
	return 2ull * n;
}

bool selftest_expected_taken(unsigned int n, uint64_t k)
{
	uint64_t i = k / 2 + 1;		/* the iteration, 1..n */

	return k % 2 ? i < n : i % 2;
}

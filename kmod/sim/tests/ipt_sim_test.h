/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the KUnit suites of the simulated PT unit (ipt_sim_kunit.ko) share:
 * a fixture holding one unit's state and the memory it writes to, and
 * helpers to program it.  The suites drive the unit's rule functions on a
 * state of their own; only ipt_sim_live touches the loaded simulator's
 * per-CPU units.
 */
#ifndef _IPT_SIM_TEST_H
#define _IPT_SIM_TEST_H

#include <kunit/test.h>
#include <linux/string.h>
#include <linux/types.h>

#include "../ipt_sim.h"

/* TraceEn | ToPA | User | BranchEn */
#define CTL_TOPA	(RTIT_CTL_TRACEEN | RTIT_CTL_TOPA |	\
			 RTIT_CTL_USR | RTIT_CTL_BRANCH_EN)
#define CTL_RANGE	(CTL_TOPA & ~RTIT_CTL_TOPA)
#define LOOP_TNT	0xec

#define SIM_TEST_MAX_PAGES	16

/**
 * struct sim_test - per-test fixture
 * @c: the simulated unit under test
 * @pages: pages allocated for output and tables, freed at exit
 * @orders: their orders
 * @n: number of @pages
 */
struct sim_test {
	struct ipt_sim_cpu c;
	struct page *pages[SIM_TEST_MAX_PAGES];
	unsigned int orders[SIM_TEST_MAX_PAGES];
	unsigned int n;
};

/* The bytes at @got are exactly the arguments. */
#define EXPECT_BYTES(test, got, ...) do {				\
	static const u8 __exp[] = { __VA_ARGS__ };			\
	KUNIT_EXPECT_EQ(test, memcmp(got, __exp, sizeof(__exp)), 0);	\
} while (0)

static inline u64 topa_entry(u64 pa, unsigned int size, u64 flags)
{
	return pa | (u64)size << 6 | flags;
}

static inline u64 out_index(const struct ipt_sim_cpu *c)
{
	return (c->output_mask & 0xffffff80) >> 7;
}

static inline u64 out_offset(const struct ipt_sim_cpu *c)
{
	return c->output_mask >> 32;
}

int sim_test_init(struct kunit *test);
void sim_test_exit(struct kunit *test);
struct ipt_sim_cpu *sim_cpu(struct kunit *test, const char *name);
u8 *sim_mem(struct kunit *test, unsigned int order, u64 *pa);
void sim_start(struct kunit *test, struct ipt_sim_cpu *c, u64 base,
	       u64 mask, u64 ctl);
void sim_produce(struct ipt_sim_cpu *c, u64 bytes);
u64 sim_reference(struct kunit *test, const char *name, u64 ctl,
		  u64 bytes, u8 **ref);
void sim_expect_gp(struct kunit *test, struct ipt_sim_cpu *c, u32 msr,
		   u64 val);
void sim_expect_ok(struct kunit *test, struct ipt_sim_cpu *c, u32 msr,
		   u64 val);

#endif /* _IPT_SIM_TEST_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt_account.c: how a charge splits between the per-user
 * allowance and RLIMIT_MEMLOCK (perf's arithmetic), the limit check at its
 * edges, and a live charge given back exactly once.
 */
#include <kunit/test.h>
#include <linux/cred.h>
#include <linux/kernel.h>
#include <linux/resource.h>
#include <linux/sched/user.h>

#include "../ipt.h"

struct split_case {
	unsigned long used, limit, pages, allow, extra;
};

static void account_split(struct kunit *test)
{
	static const struct split_case cases[] = {
		/* all within the allowance */
		{ 0, 258, 16, 16, 0 },
		/* exactly filling it */
		{ 242, 258, 16, 16, 0 },
		/* straddling it: the rest is extra */
		{ 250, 258, 16, 8, 8 },
		/* allowance used up */
		{ 258, 258, 16, 0, 16 },
		/* the parameter was lowered below what is used */
		{ 300, 258, 16, 0, 16 },
		/* no allowance at all */
		{ 0, 0, 16, 0, 16 },
		/* nothing to charge */
		{ 10, 258, 0, 0, 0 },
	};
	unsigned long allow, extra;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct split_case *c = &cases[i];

		ipt_account_split(c->used, c->limit, c->pages, &allow, &extra);
		KUNIT_EXPECT_EQ_MSG(test, allow, c->allow, "case %u", i);
		KUNIT_EXPECT_EQ_MSG(test, extra, c->extra, "case %u", i);
		KUNIT_EXPECT_EQ_MSG(test, allow + extra, c->pages, "case %u", i);
	}
}

static void account_fits(struct kunit *test)
{
	const unsigned long inf = RLIM_INFINITY >> PAGE_SHIFT;

	KUNIT_EXPECT_TRUE(test, ipt_account_fits(0, 16, 16));
	KUNIT_EXPECT_FALSE(test, ipt_account_fits(0, 17, 16));
	KUNIT_EXPECT_TRUE(test, ipt_account_fits(8, 8, 16));
	KUNIT_EXPECT_FALSE(test, ipt_account_fits(8, 9, 16));
	KUNIT_EXPECT_TRUE(test, ipt_account_fits(16, 0, 16));
	/* Someone else's locked_vm already above the limit. */
	KUNIT_EXPECT_FALSE(test, ipt_account_fits(20, 0, 16));
	KUNIT_EXPECT_FALSE(test, ipt_account_fits(20, 1, 16));
	/* No overflow near the top. */
	KUNIT_EXPECT_TRUE(test, ipt_account_fits(inf - 1, 1, inf));
	KUNIT_EXPECT_FALSE(test, ipt_account_fits(inf - 1, ULONG_MAX, inf));
	KUNIT_EXPECT_FALSE(test, ipt_account_fits(1, ULONG_MAX, ULONG_MAX));
}

/*
 * A live charge by the test thread (a kernel thread: no mm), with the
 * RLIMIT_MEMLOCK bypass: the user's allowance use and locked_vm grow by
 * the charge and come back exactly after one uncharge; a second uncharge
 * changes nothing.
 */
static void account_charge_once(struct kunit *test)
{
	struct user_struct *user = current_user();
	unsigned long pages0 = ipt_account_user_pages(user->uid);
	long locked0 = atomic_long_read(&user->locked_vm);
	struct ipt_charge ch = {};

	KUNIT_ASSERT_EQ(test, ipt_account_charge(&ch, 1UL << 20, true), 0);
	KUNIT_EXPECT_PTR_EQ(test, ch.user, user);
	KUNIT_EXPECT_EQ(test, ch.allow + ch.extra, 1UL << 20);
	KUNIT_EXPECT_EQ(test, ipt_account_user_pages(user->uid), pages0 + ch.allow);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&user->locked_vm),
			locked0 + (long)ch.extra);
	ipt_account_uncharge(&ch);
	KUNIT_EXPECT_PTR_EQ(test, ch.user, NULL);
	KUNIT_EXPECT_EQ(test, ipt_account_user_pages(user->uid), pages0);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&user->locked_vm), locked0);
	ipt_account_uncharge(&ch);
	KUNIT_EXPECT_EQ(test, ipt_account_user_pages(user->uid), pages0);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&user->locked_vm), locked0);
}

static struct kunit_case ipt_account_cases[] = {
	KUNIT_CASE(account_split),
	KUNIT_CASE(account_fits),
	KUNIT_CASE(account_charge_once),
	{}
};

static struct kunit_suite ipt_account_suite = {
	.name = "ipt_account",
	.test_cases = ipt_account_cases,
};

kunit_test_suites(&ipt_account_suite);

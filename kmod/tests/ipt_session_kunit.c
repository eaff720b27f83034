// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for ipt_session.c: which sessions may be configured beside
 * the ones that are (ipt_session_excluded()): any number of per-thread
 * sessions, a per-CPU session alone.
 *
 * The sessions are fake: only their mode and list node are used.
 */
#include <kunit/test.h>
#include <linux/list.h>
#include <linux/mutex.h>

#include "../ipt_session.h"

struct fixture {
	struct ipt_device idev;
	struct ipt_session s[3];
};

static int session_test_init(struct kunit *test)
{
	struct fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	mutex_init(&f->idev.lock);
	INIT_LIST_HEAD(&f->idev.sessions);
	test->priv = f;
	return 0;
}

/* Configure fake session @i in @mode: on the device's list. */
static void add(struct fixture *f, unsigned int i, enum ipt_mode mode)
{
	f->s[i].idev = &f->idev;
	f->s[i].mode = mode;
	list_add_tail(&f->s[i].node, &f->idev.sessions);
}

static bool excluded(struct fixture *f, enum ipt_mode mode)
{
	bool ret;

	mutex_lock(&f->idev.lock);
	ret = ipt_session_excluded(&f->idev, mode);
	mutex_unlock(&f->idev.lock);
	return ret;
}

static void session_none_excludes_nothing(struct kunit *test)
{
	struct fixture *f = test->priv;

	KUNIT_EXPECT_FALSE(test, excluded(f, IPT_MODE_CPU));
	KUNIT_EXPECT_FALSE(test, excluded(f, IPT_MODE_THREAD));
}

static void session_threads_share(struct kunit *test)
{
	struct fixture *f = test->priv;

	add(f, 0, IPT_MODE_THREAD);
	KUNIT_EXPECT_FALSE(test, excluded(f, IPT_MODE_THREAD));
	KUNIT_EXPECT_TRUE(test, excluded(f, IPT_MODE_CPU));
	add(f, 1, IPT_MODE_THREAD);
	KUNIT_EXPECT_FALSE(test, excluded(f, IPT_MODE_THREAD));
	KUNIT_EXPECT_TRUE(test, excluded(f, IPT_MODE_CPU));
	/* The first goes: the second still keeps per-CPU mode out. */
	list_del_init(&f->s[0].node);
	KUNIT_EXPECT_TRUE(test, excluded(f, IPT_MODE_CPU));
	list_del_init(&f->s[1].node);
	KUNIT_EXPECT_FALSE(test, excluded(f, IPT_MODE_CPU));
}

static void session_cpu_alone(struct kunit *test)
{
	struct fixture *f = test->priv;

	add(f, 0, IPT_MODE_CPU);
	KUNIT_EXPECT_TRUE(test, excluded(f, IPT_MODE_THREAD));
	KUNIT_EXPECT_TRUE(test, excluded(f, IPT_MODE_CPU));
}

static struct kunit_case session_cases[] = {
	KUNIT_CASE(session_none_excludes_nothing),
	KUNIT_CASE(session_threads_share),
	KUNIT_CASE(session_cpu_alone),
	{}
};

static struct kunit_suite session_suite = {
	.name = "ipt_session",
	.init = session_test_init,
	.test_cases = session_cases,
};

kunit_test_suite(session_suite);

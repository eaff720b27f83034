/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt: what the driver's KUnit suites (ipt_kunit.ko) share.
 */
#ifndef _IPT_TEST_H
#define _IPT_TEST_H

#include <kunit/test.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/types.h>

#include "../ipt_session.h"

/* The made-up physical address of table @t of a fake buffer. */
#define IPT_TEST_TABLE(t)	(0x10000000ULL + (u64)(t) * SZ_4K)

/* ipt_buffer_kunit.c */
struct ipt_buffer *ipt_test_fake_buffer(struct kunit *test, unsigned int n,
					u64 single, bool stop);

/**
 * struct ipt_test_session - a session of one trace on a fake backend
 * @idev: the device, only its lock used
 * @s: the session, on @idev
 * @t: its trace
 *
 * For the suites that call ipt's functions on a session directly
 * (ipt_pmi_kunit.c, ipt_stream_kunit.c); each sets the rest.
 */
struct ipt_test_session {
	struct ipt_device idev;
	struct ipt_session s;
	struct ipt_trace t;
};

/* A zeroed session on backend @hw, freed at the test's end. */
static inline struct ipt_test_session *
ipt_test_session(struct kunit *test, const struct ipt_hw_ops *hw)
{
	struct ipt_test_session *f = kunit_kzalloc(test, sizeof(*f),
						   GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	mutex_init(&f->idev.lock);
	f->s.idev = &f->idev;
	f->s.hw = hw;
	f->t.s = &f->s;
	return f;
}

#endif /* _IPT_TEST_H */

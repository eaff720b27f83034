/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt: what the driver's KUnit suites (ipt_kunit.ko) share.
 */
#ifndef _IPT_TEST_H
#define _IPT_TEST_H

#include <linux/sizes.h>
#include <linux/types.h>

struct kunit;
struct ipt_buffer;

/* The made-up physical address of table @t of a fake buffer. */
#define IPT_TEST_TABLE(t)	(0x10000000ULL + (u64)(t) * SZ_4K)

/* ipt_buffer_kunit.c */
struct ipt_buffer *ipt_test_fake_buffer(struct kunit *test, unsigned int n,
					u64 single, bool stop);

#endif /* _IPT_TEST_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the packet encoders (ipt_sim_packets.c), byte by byte.
 */
#include <kunit/test.h>
#include <linux/kernel.h>

#include "ipt_sim_test.h"

static void pkt_encodings(struct kunit *test)
{
	u8 b[16];

	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_psb(b), (size_t)16);
	EXPECT_BYTES(test, b, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
		     0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_psbend(b), (size_t)2);
	EXPECT_BYTES(test, b, 0x02, 0x23);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_tsc(b, 0x11223344556677ULL), (size_t)8);
	EXPECT_BYTES(test, b, 0x19, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_tma(b, 0xbeef, 0x1ff), (size_t)7);
	EXPECT_BYTES(test, b, 0x02, 0x73, 0xef, 0xbe, 0x00, 0xff, 0x01);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cbr(b, 0x14), (size_t)4);
	EXPECT_BYTES(test, b, 0x02, 0x03, 0x14, 0x00);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_mode_exec(b), (size_t)2);
	EXPECT_BYTES(test, b, 0x99, 0x01);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_TIP_PGE, 0x401000),
			(size_t)7);
	EXPECT_BYTES(test, b, 0x71, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_FUP,
					     0xffffffff81000000ULL), (size_t)7);
	EXPECT_BYTES(test, b, 0x7d, 0x00, 0x00, 0x00, 0x81, 0xff, 0xff);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_TIP, 0x1234), (size_t)7);
	EXPECT_BYTES(test, b, 0x6d, 0x34, 0x12, 0x00, 0x00, 0x00, 0x00);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ip(b, IPT_SIM_PKT_TIP_PGD,
					     IPT_SIM_IP_NONE), (size_t)1);
	EXPECT_BYTES(test, b, 0x01);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_mtc(b, 0xa5), (size_t)2);
	EXPECT_BYTES(test, b, 0x59, 0xa5);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_ovf(b), (size_t)2);
	EXPECT_BYTES(test, b, 0x02, 0xf3);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cyc(b, 0x1f), (size_t)1);
	EXPECT_BYTES(test, b, 0xfb);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cyc(b, 100), (size_t)2);
	EXPECT_BYTES(test, b, 0x27, 0x06);
	KUNIT_EXPECT_EQ(test, ipt_sim_pkt_cyc(b, 0x1000), (size_t)3);
	EXPECT_BYTES(test, b, 0x07, 0x01, 0x02);
}

static struct kunit_case sim_packets_cases[] = {
	KUNIT_CASE(pkt_encodings),
	{}
};

static struct kunit_suite sim_packets_suite = {
	.name = "ipt_sim_packets",
	.test_cases = sim_packets_cases,
};

kunit_test_suites(&sim_packets_suite);

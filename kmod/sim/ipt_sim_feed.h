/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ipt_sim: the record layout of a feed, the branch content a test writes
 * to debugfs ipt_sim/cpuN/feed or ipt_sim/task_feed (see "Feed format" in
 * Documentation/simulator.rst).
 *
 * Shared by the simulated unit, which parses feeds, and by the tools that
 * write them (tools/testing/groundtruth), so it includes nothing but
 * <linux/types.h> and uses fixed-width little-endian types only.  Records
 * follow one another without padding: a header may sit at any byte, so
 * read it with a byte copy or unaligned accessors, never in place.
 */
#ifndef _IPT_SIM_FEED_H
#define _IPT_SIM_FEED_H

#include <linux/types.h>

/**
 * struct ipt_sim_feed_hdr - the header of one feed record
 * @len: bytes of payload after the header (0..65535); 0 only sets @ip
 * @flags: IPT_SIM_FEED_* flags; other bits 0
 * @reserved: 0
 * @ip: the IP execution is at after the payload
 *
 * The payload, @len bytes of packets, follows the header and is written
 * by the unit verbatim, as one piece.
 */
struct ipt_sim_feed_hdr {
	__le16 len;
	__le16 flags;
	__le32 reserved;
	__le64 ip;
};

/*
 * Bytes of struct ipt_sim_feed_hdr: where a record's payload starts.  The
 * fields are naturally aligned, so no compiler pads them; the simulator
 * and ptgen check this at build time.
 */
#define IPT_SIM_FEED_HDR	16

/* Largest payload of one record (@len is 16 bits). */
#define IPT_SIM_FEED_LEN_MAX	0xffff

/*
 * Flag: after this record the program is outside the traced context (its
 * payload ended with TIP.PGD, e.g. at a system call under user-only
 * tracing), so the unit writes no IP packet of its own.
 */
#define IPT_SIM_FEED_CTX_OFF	0x0001

#endif /* _IPT_SIM_FEED_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of ipttool selftest's pure parts: the bundled program's
 * ground truth by construction, the packets and feed made of it, and the
 * decode of those packets by libipt against the program's real code in
 * this process, which must equal the ground truth exactly, and must not
 * when one branch outcome or one packet is wrong.
 */
#include <stdlib.h>
#include <string.h>
#include <intel-pt.h>

#include "../ipttool/ipttool.h"
#include "tap.h"

static const struct ipt_caps icl = {
	.size = sizeof(struct ipt_caps), .vendor = "GenuineIntel",
	.family = 6, .model = 0x7e, .stepping = 5,
};

static void test_model(void)
{
	static const bool want3[] = { 1, 1, 0, 1, 1, 0 };
	bool ok = true;

	CHECK(selftest_expected_insns(1) == 7, "n=1: xor, inc, test, jnz, cmp, jb, ret");
	CHECK(selftest_expected_insns(2) == 13, "n=2: 13 instructions (one nop)");
	CHECK(selftest_expected_insns(2000) == 2 + 10000 + 1000, "n=2000: 11002 instructions");
	CHECK(selftest_expected_branches(3) == 6, "n=3: 6 conditional branches");
	for (int k = 0; k < 6; k++)
		ok = ok && selftest_expected_taken(3, k) == want3[k];
	CHECK(ok, "n=3: outcomes T T N T T N (A taken on odd i, B while i < n)");
	CHECK((uintptr_t)ipt_st_work_end - (uintptr_t)ipt_st_work == 15,
	      "the program is 15 bytes (xor 2, inc 2, test 3, jnz 2, nop 1, cmp 2, jb 2, ret 1)");
	ipt_st_call(5);
	ipt_st_call(1);
	CHECK(1, "the program runs and returns (n = 5, 1)");
}

/* Walk @buf's packets with libipt; counts by type, TNT bits and their values. */
struct pkts {
	int psb, pge, pgd, tnt, other, errors;
	uint64_t nbits;
	bool bits[8192];
	uint64_t pge_ip, pgd_ip;
};

static void scan(const uint8_t *buf, size_t len, struct pkts *p)
{
	struct pt_packet_decoder *dec;
	struct pt_config cfg;
	struct pt_packet pkt;
	int st;

	memset(p, 0, sizeof(*p));
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec || pt_pkt_sync_set(dec, 0) < 0) {
		p->errors++;
		return;
	}
	while ((st = pt_pkt_next(dec, &pkt, sizeof(pkt))) >= 0) {
		switch (pkt.type) {
		case ppt_tip_pge:
			p->pge++;
			p->pge_ip = pkt.payload.ip.ip;
			break;
		case ppt_tip_pgd:
			p->pgd++;
			p->pgd_ip = pkt.payload.ip.ip;
			break;
		case ppt_tnt_8:
		case ppt_tnt_64:
			p->tnt++;
			for (int i = pkt.payload.tnt.bit_size - 1; i >= 0; i--)
				if (p->nbits < 8192)
					p->bits[p->nbits++] = pkt.payload.tnt.payload >> i & 1;
			break;
		case ppt_psb:
			p->psb++;
			break;
		default:
			p->other++;
		}
	}
	if (st != -pte_eos)
		p->errors++;
	pt_pkt_free_decoder(dec);
}

static void test_tnt(void)
{
	bool bits[100];
	uint8_t buf[64];
	struct pkts p;
	size_t n;
	bool same = true;

	for (int i = 0; i < 100; i++)
		bits[i] = (i * 7 + 3) % 5 < 2;
	n = selftest_tnt(bits, 100, buf, sizeof(buf));
	scan(buf, n, &p);
	for (int i = 0; i < 100; i++)
		same = same && p.bits[i] == bits[i];
	CHECK(n == 8 + 8 + 1 && p.tnt == 3 && !p.errors,
	      "100 bits: two TNT-64 of 47 and a TNT-8 of 6, libipt reads them (%zu bytes)", n);
	CHECK(p.nbits == 100 && same, "libipt reads the 100 outcomes back in order");
	n = selftest_tnt(bits, 3, buf, sizeof(buf));
	scan(buf, n, &p);
	CHECK(n == 1 && p.nbits == 3 && p.bits[0] == bits[0] && p.bits[2] == bits[2],
	      "3 bits: one TNT-8");
	CHECK(selftest_tnt(bits, 100, buf, 10) == 0, "a short buffer gives 0");
}

/* The unit's PSB+ as the simulator writes it at enable (no timing, no FUP). */
static size_t psb_plus(uint8_t *buf)
{
	size_t n = 0;

	for (int i = 0; i < 8; i++) {
		buf[n++] = 0x02;
		buf[n++] = 0x82;
	}
	buf[n++] = 0x99;	/* MODE.Exec: 64-bit */
	buf[n++] = 0x01;
	buf[n++] = 0x02;	/* PSBEND */
	buf[n++] = 0x23;
	return n;
}

/*
 * Replay @feed as the unit would: a PSB+ at enable and before every
 * @every-th record, the payloads verbatim.
 */
static size_t replay(const uint8_t *feed, size_t len, int every, uint8_t *out)
{
	size_t pos = 0, n = psb_plus(out);
	int rec = 0;

	while (pos + 16 <= len) {
		size_t l = feed[pos] | feed[pos + 1] << 8;

		pos += 16;
		if (l && rec++ && every && rec % every == 0)
			n += psb_plus(out + n);
		memcpy(out + n, feed + pos, l);
		n += l;
		pos += l;
	}
	return n;
}

static void test_feed_and_decode(void)
{
	uint64_t work = (uintptr_t)ipt_st_work, after = (uintptr_t)ipt_st_after;
	static uint8_t feed[1 << 16], pt[1 << 16];
	static struct selftest_decoded d;
	struct selftest_image img;
	char why[256];
	struct pkts p;
	size_t fl, n, run;
	int ret;

	run = selftest_run_packets(2000, work, after, pt, sizeof(pt));
	scan(pt, run, &p);
	CHECK(run && p.pge == 1 && p.pgd == 1 && p.pge_ip == work && p.pgd_ip == after &&
	      p.nbits == 4000 && !p.errors && !p.other,
	      "one call: TIP.PGE(work), 4000 TNT bits, TIP.PGD(after) (%zu bytes)", run);

	fl = selftest_feed(2000, 3, work, after, feed, sizeof(feed));
	CHECK(fl == 16 + 3 * (16 + run), "feed: an IP-only record and 3 records (%zu bytes)", fl);
	CHECK(feed[0] == 0 && feed[1] == 0 && feed[2] == 1 && !memcmp(feed + 8, &work, 8),
	      "first record: len 0, CTX_OFF, ip = the program's entry (in the filter range)");
	CHECK((size_t)(feed[16] | feed[17] << 8) == run && feed[18] == 1 &&
	      !memcmp(feed + 24, &work, 8) && !memcmp(feed + 32, pt, run),
	      "each record: len, CTX_OFF, ip = the entry, the call's packets");
	CHECK(selftest_feed(2000, 3, work, after, feed, 100) == 0, "a short buffer gives 0");

	/* one call replayed, decoded against this process's real code */
	fl = selftest_feed(2000, 1, work, after, feed, sizeof(feed));
	n = replay(feed, fl, 0, pt);
	selftest_image_work(&img);
	ret = selftest_decode(pt, n, &icl, &img, work, (uintptr_t)ipt_st_work_end, &d);
	CHECK(!ret && d.insns == selftest_expected_insns(2000) && d.nbranches == 4000 &&
	      !d.errors && d.syncs == 1, "libipt decodes the replayed feed: %" PRIu64
	      " instructions, %" PRIu64 " branches, %" PRIu64 " errors", d.insns, d.nbranches,
	      d.errors);
	ret = selftest_compare(&d, 2000, why, sizeof(why));
	CHECK(ret == 0, "it equals the ground truth: %s", why);
	CHECK(selftest_compare(&d, 1999, why, sizeof(why)) != 0,
	      "but not that of another n: %s", why);
	CHECK(selftest_image_self(&img) == 0 && img.nr >= 1, "this process's code: %u mappings",
	      img.nr);
	selftest_decode(pt, n, &icl, &img, work, (uintptr_t)ipt_st_work_end, &d);
	CHECK(!selftest_compare(&d, 2000, why, sizeof(why)), "decoded with the whole process's code too");

	/* two calls: twice the instructions, so not one call's truth */
	fl = selftest_feed(2000, 2, work, after, feed, sizeof(feed));
	n = replay(feed, fl, 1, pt);
	selftest_decode(pt, n, &icl, &img, work, (uintptr_t)ipt_st_work_end, &d);
	CHECK(d.insns == 2 * selftest_expected_insns(2000) && !d.errors &&
	      selftest_compare(&d, 2000, why, sizeof(why)),
	      "two calls with a PSB+ between: %" PRIu64 " instructions, refused: %s", d.insns, why);

	/* mutants of one call's trace must be refused */
	fl = selftest_feed(2000, 1, work, after, feed, sizeof(feed));
	n = replay(feed, fl, 0, pt);
	pt[20 + 7 + 5] ^= 0x10;	/* one outcome in the first TNT-64 */
	selftest_decode(pt, n, &icl, &img, work, (uintptr_t)ipt_st_work_end, &d);
	ret = selftest_compare(&d, 2000, why, sizeof(why));
	CHECK(ret != 0, "one branch outcome flipped: refused: %s", why);
	n = replay(feed, fl, 0, pt);
	memmove(pt + 20 + 7, pt + 20 + 7 + 8, n - 20 - 7 - 8);	/* a TNT-64 lost */
	selftest_decode(pt, n - 8, &icl, &img, work, (uintptr_t)ipt_st_work_end, &d);
	ret = selftest_compare(&d, 2000, why, sizeof(why));
	CHECK(ret != 0, "one TNT packet missing: refused: %s", why);
	CHECK(selftest_compare(&(struct selftest_decoded){ 0 }, 2000, why, sizeof(why)) != 0,
	      "an empty trace: refused: %s", why);
}

static void test_pmi_runs(void)
{
	unsigned int r = selftest_pmi_runs(8 * 700, 8, 4096, 3);
	uint64_t total = 700ull * r;

	CHECK(r == 20, "700 bytes a call: 20 calls for 3.5 rings of 4 KiB (got %u)", r);
	CHECK(total / 4096 == 3 && total % 4096 > 1024 && total % 4096 < 3072,
	      "they end mid-ring: %" PRIu64 " bytes", total);
	CHECK(selftest_pmi_runs(0, 8, 4096, 3) == 0, "no reference bytes: 0");
	CHECK(selftest_pmi_runs(1, 8, 1 << 30, 3) == 0, "beyond 2^20 calls: 0");
}

static void test_report(void)
{
	struct json_object *checks = json_object_new_array(), *o, *v;
	const char *s;

	json_object_array_add(checks, json_object_new_object());
	o = selftest_report(&icl, checks, 1);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	CHECK(json_object_object_get_ex(o, "ipttool_version", &v) &&
	      json_object_object_get_ex(o, "kernel", &v) &&
	      json_object_object_get_ex(v, "release", NULL) &&
	      json_object_object_get_ex(o, "caps", NULL) &&
	      json_object_object_get_ex(o, "checks", NULL),
	      "report: version, kernel release, caps, checks");
	CHECK(json_object_object_get_ex(o, "cpu", &v) &&
	      json_object_object_get_ex(v, "family", NULL) &&
	      json_object_object_get_ex(v, "stepping", NULL) && strstr(s, "\"model\":126"),
	      "report: CPU family/model/stepping");
	CHECK(strstr(s, "\"result\":\"fail\""), "report: result fail with a failed check");
	json_object_put(o);
}

int main(void)
{
	test_model();
	test_tnt();
	test_feed_and_decode();
	test_pmi_runs();
	test_report();
	return tap_done();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of ptcheck: traces built with libipt's encoder, clean and
 * broken, against the simulated unit's built-in loop at 0x401000.  Proves
 * ptcheck accepts a valid stream and rejects each kind of bad one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <intel-pt.h>

#include "../../../userspace/tests/tap.h"

static const unsigned char loop_code[] = {
	0x31, 0xc9,		/* xor %ecx,%ecx */
	0xff, 0xc1,		/* inc %ecx */
	0x83, 0xf9, 0x03,	/* cmp $3,%ecx */
	0x75, 0xf9,		/* jne 401002 */
	0xeb, 0xf5,		/* jmp 401000 */
};

static char dir[] = "/tmp/ptcheck-test.XXXXXX";
static char code_path[256], trace_path[256], out_path[256];

struct enc {
	struct pt_encoder *e;
	uint8_t buf[4096];
	struct pt_config cfg;
};

static void enc_init(struct enc *x)
{
	pt_config_init(&x->cfg);
	x->cfg.begin = x->buf;
	x->cfg.end = x->buf + sizeof(x->buf);
	x->e = pt_alloc_encoder(&x->cfg);
}

static void put(struct enc *x, enum pt_packet_type type)
{
	struct pt_packet p = { .type = type };

	if (pt_enc_next(x->e, &p) < 0)
		abort();
}

static void put_ip(struct enc *x, enum pt_packet_type type, enum pt_ip_compression ipc,
		   uint64_t ip)
{
	struct pt_packet p = { .type = type };

	p.payload.ip.ipc = ipc;
	p.payload.ip.ip = ip;
	if (pt_enc_next(x->e, &p) < 0)
		abort();
}

static void put_tnt(struct enc *x, uint8_t n, uint64_t bits)
{
	struct pt_packet p = { .type = ppt_tnt_8 };

	p.payload.tnt.bit_size = n;
	p.payload.tnt.payload = bits;
	if (pt_enc_next(x->e, &p) < 0)
		abort();
}

static void put_mode_exec64(struct enc *x)
{
	struct pt_packet p = { .type = ppt_mode };

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	if (pt_enc_next(x->e, &p) < 0)
		abort();
}

/* PSB+, enable at the loop, two passes of the loop (T T N, twice). */
static void loop_trace(struct enc *x, int passes)
{
	int i;

	put(x, ppt_psb);
	put_mode_exec64(x);
	put(x, ppt_psbend);
	put_ip(x, ppt_tip_pge, pt_ipc_sext_48, 0x401000);
	for (i = 0; i < passes; i += 2)
		put_tnt(x, 6, 0x36);
	put_ip(x, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

static size_t enc_len(struct enc *x)
{
	uint64_t off = 0;

	pt_enc_get_offset(x->e, &off);
	return off;
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		abort();
}

/* Run ptcheck with @args on @trace; its exit status, output in out_path. */
static int run(const void *trace, size_t n, const char *args)
{
	char cmd[1024];
	int st;

	write_file(trace_path, trace, n);
	snprintf(cmd, sizeof(cmd), "%s %s %s >%s 2>&1", PTCHECK, args, trace_path, out_path);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int output_has(const char *needle)
{
	char buf[8192];
	FILE *f = fopen(out_path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

int main(void)
{
	char raw[300], args[400];
	struct enc x;
	size_t n;
	int st;

	if (!mkdtemp(dir))
		return 2;
	snprintf(code_path, sizeof(code_path), "%s/code.bin", dir);
	snprintf(trace_path, sizeof(trace_path), "%s/trace.pt", dir);
	snprintf(out_path, sizeof(out_path), "%s/out.txt", dir);
	write_file(code_path, loop_code, sizeof(loop_code));
	snprintf(raw, sizeof(raw), "--raw %s:0x401000", code_path);

	enc_init(&x);
	loop_trace(&x, 2);
	n = enc_len(&x);
	st = run(x.buf, n, raw);
	CHECK(st == 0, "a clean loop trace passes (status %d)", st);
	/*
	 * 2 passes of 11 instructions, then xor inc cmp; the jne needs a TNT
	 * bit the stream no longer has, so it is not counted.
	 */
	CHECK(output_has("25 instructions (0x401000 .. 0x401004)"),
	      "it decodes to the exact instruction count and range");
	snprintf(args, sizeof(args), "%s --min-insn 25 --min-psb 1 --cpu 6/126/5", raw);
	CHECK(run(x.buf, n, args) == 0, "minimums that are met pass, with a CPU given");
	snprintf(args, sizeof(args), "%s --min-insn 26", raw);
	CHECK(run(x.buf, n, args) == 1, "an instruction minimum not met fails");
	CHECK(run(x.buf, n, "--min-psb 2") == 1, "a PSB minimum not met fails");
	CHECK(run(x.buf, n, "--min-ovf 1") == 1 && output_has("0 OVF, wanted at least 1"),
	      "an OVF minimum not met fails");
	CHECK(run(x.buf, n, "-j") == 0 && output_has("\"ok\":true") &&
	      output_has("\"psbs\":1"), "packets alone pass; JSON output");

	/* Truncated inside the final packet: the end of a stop-on-full buffer. */
	CHECK(run(x.buf, n - 1, raw) == 0, "a stream cut inside its last packet passes");

	/* A TIP to an address outside every image. */
	pt_free_encoder(x.e);
	enc_init(&x);
	put(&x, ppt_psb);
	put_mode_exec64(&x);
	put(&x, ppt_psbend);
	put_ip(&x, ppt_tip_pge, pt_ipc_sext_48, 0x500000);
	put_ip(&x, ppt_tip_pgd, pt_ipc_suppressed, 0);
	n = enc_len(&x);
	CHECK(run(x.buf, n, raw) == 1 && output_has("insn: offset"),
	      "an IP outside the code image is a decode error with its offset");

	/* More branch outcomes than the code can consume before a TIP.PGD. */
	pt_free_encoder(x.e);
	enc_init(&x);
	loop_trace(&x, 2);
	n = enc_len(&x);
	x.buf[n - 1] = 0x0d;	/* turn TIP.PGD (0x01) into a TIP with no IP */
	CHECK(run(x.buf, n, raw) == 1, "a TIP where the code has a conditional branch fails");

	/* Garbage after the first PSB+; a second, clean PSB+ follows. */
	pt_free_encoder(x.e);
	enc_init(&x);
	put(&x, ppt_psb);
	put_mode_exec64(&x);
	put(&x, ppt_psbend);
	n = enc_len(&x);
	memset(x.buf + n, 0x02, 1);
	x.buf[n + 1] = 0xff;	/* 02 ff: no such extended opcode */
	pt_enc_sync_set(x.e, n + 2);
	loop_trace(&x, 2);
	n = enc_len(&x);
	st = run(x.buf, n, raw);
	CHECK(st == 1 && output_has("packet: offset 0x14") &&
	      output_has("insn: offset 0"),
	      "an invalid opcode is a packet error at its offset (status %d)", st);
	CHECK(output_has("25 instructions"),
	      "decoding resumes at the next PSB and still decodes the rest");

	CHECK(run("", 0, "") == 0 && output_has("0 bytes, 0 packets"),
	      "an empty trace is empty, not an error");
	CHECK(system(PTCHECK " /nonexistent/trace.pt >/dev/null 2>&1") == 2 << 8,
	      "a missing file is a usage/I-O error (status 2)");
	snprintf(args, sizeof(args), "--raw %s/none.bin:0x1000", dir);
	CHECK(run(x.buf, n, args) == 2, "a missing code image is status 2");

	pt_free_encoder(x.e);
	/* KEEP=1 leaves the last trace and code image for a look. */
	if (getenv("KEEP"))
		return tap_done();
	snprintf(args, sizeof(args), "rm -rf %s", dir);
	if (system(args))
		return 2;
	return tap_done();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The streaming consumer of libiptcap (lib/stream.c) on the host, without
 * ipt.ko: this program defines open() and ioctl(), so that libiptcap's
 * calls on "/dev/ipt-stream-test" reach a model of a streamed session as
 * uapi/linux/ipt.h describes it: stream positions count bytes since
 * configure, position p lies at buffer offset p % size, the unit pauses
 * instead of writing over what was not released (counting the bytes it
 * could not write), a release resumes it and appends a gap record, and
 * the kernel itemises a bounded number of gaps.  The device file is a
 * memfd holding the buffers, so the library's mmap() is the real one.
 *
 * The "unit" writes a known byte sequence (byte k of trace t is
 * gen(t, k), k counting lost bytes too), so that a test checks that the
 * files hold exactly the bytes produced minus those in the gaps, and that
 * the gaps are where and as large as the model made them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ipttool/ipttool.h"
#include "json_path.h"
#include "tap.h"

#define FAKE_PATH "/dev/ipt-stream-test"
#include "fake_ipt.h"

/*
 * fsync() of the test's own: with fail_pt_fsync set, an fsync of a ".pt"
 * file fails with EIO (a disk that loses the trace's last bytes); every
 * call on a ".pt" file is counted.
 */
static int fail_pt_fsync;
static unsigned int pt_fsyncs;

int fsync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	char link[64], target[512];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n > 3 && !memcmp(target + n - 3, ".pt", 3)) {
		pt_fsyncs++;
		if (fail_pt_fsync) {
			errno = fail_pt_fsync;
			return -1;
		}
	}
	return real(fd);
}

#define FK_SIZE (64 * 1024)	/* buffer per trace */
#define FK_TRACES 4
#define FK_GAP_KEEP 3		/* gap records the "kernel" itemises */

struct fk_trace {
	bool exists;
	uint32_t tid;
	uint64_t produced;	/* bytes the unit generated, lost ones included */
	uint64_t captured, released;
	bool paused;
	uint64_t pause_off, pause_tsc, lost;
	struct ipt_gap gaps[FK_GAP_KEEP];
	uint64_t nr_gaps, gap_bytes;
};

static struct {
	unsigned char *mem;
	bool stream_feature;
	bool thread_mode;
	bool unknown_size;	/* silicon: bytes_lost unknown */
	int state;
	struct ipt_config cfg;
	uint64_t tsc;
	struct fk_trace tr[FK_TRACES];
	unsigned int releases;
	uint64_t start_bytes;	/* the unit writes this much into traces 0 and 1 at start */
	bool record_mode;	/* configure creates traces 0 and 1 (per-CPU ipttool record) */
	bool stream_eopnotsupp;	/* streams, but not this session (per-thread on stream-k) */
	unsigned int release_eagain;	/* the next releases fail EAGAIN, changing nothing */
	unsigned int release_calls;	/* STREAM_RELEASE calls, failed ones too */
} fk;

static unsigned char gen(unsigned int t, uint64_t k)
{
	return (unsigned char)((k * 131 + (k >> 8) * 7 + t * 29) & 0xff);
}

static int fake_open(void)
{
	fake_fd = memfd_create("ipt-stream-test", MFD_CLOEXEC);
	if (fake_fd < 0 || ftruncate(fake_fd, (off_t)FK_SIZE * FK_TRACES))
		return -1;
	fk.mem = mmap(NULL, (size_t)FK_SIZE * FK_TRACES, PROT_READ | PROT_WRITE, MAP_SHARED,
		      fake_fd, 0);
	return fk.mem == MAP_FAILED ? -1 : fake_fd;
}

/* The unit writes @n more bytes into trace @t, pausing where it must. */
static void fk_produce(unsigned int t, uint64_t n)
{
	struct fk_trace *x = &fk.tr[t];

	while (n--) {
		if (x->captured - x->released == FK_SIZE) {
			if (!x->paused) {
				x->paused = true;
				x->pause_off = x->captured;
				x->pause_tsc = ++fk.tsc;
				x->lost = 0;
			}
			x->lost++;
		} else {
			fk.mem[t * FK_SIZE + x->captured % FK_SIZE] = gen(t, x->produced);
			x->captured++;
		}
		x->produced++;
	}
}

static void fk_add_gap(unsigned int t, uint64_t off, uint64_t t0, uint64_t t1, uint64_t lost)
{
	struct fk_trace *x = &fk.tr[t];
	struct ipt_gap *g = &x->gaps[x->nr_gaps % FK_GAP_KEEP];

	memset(g, 0, sizeof(*g));
	g->offset = off;
	g->tsc_start = t0;
	g->tsc_end = t1;
	g->bytes_lost = lost;
	g->cpu = t;
	x->nr_gaps++;
	if (lost != IPT_GAP_BYTES_UNKNOWN)
		x->gap_bytes += lost;
}

static int fail(int e)
{
	errno = e;
	return -1;
}

static struct fk_trace *fk_trace_of(uint32_t i)
{
	if (i >= FK_TRACES || !fk.tr[i].exists)
		return NULL;
	return &fk.tr[i];
}

static int fake_ioctl(unsigned long req, void *arg)
{
	if (req == IPT_IOC_GET_CAPS) {
		struct ipt_caps *c = arg;

		fake_caps(c, 0x8c);
		c->features = IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI |
			      (fk.stream_feature ? IPT_FEAT_STREAM : 0);
		c->nr_cpus = FK_TRACES;
		c->max_topa_order = 22;
		c->max_trace_size = FK_SIZE;
		return 0;
	}
	if (req == IPT_IOC_CONFIGURE) {
		const struct ipt_config *cfg = arg;

		if (fk.state)
			return fail(EBUSY);
		if ((cfg->buffer_flags & IPT_BUFFER_STREAM) && !fk.stream_feature)
			return fail(EINVAL);
		if ((cfg->buffer_flags & IPT_BUFFER_STREAM) && fk.stream_eopnotsupp)
			return fail(EOPNOTSUPP);
		/* smaller buffers only where the unit writes nothing (the model is FK_SIZE) */
		if (cfg->buffer_size > FK_SIZE || (cfg->buffer_size != FK_SIZE && fk.start_bytes))
			return fail(EINVAL);
		fk.cfg = *cfg;
		fk.state = IPT_STATE_CONFIGURED;
		if (fk.record_mode)
			fk.tr[0].exists = fk.tr[1].exists = true;
		return 0;
	}
	if (req == IPT_IOC_START || req == IPT_IOC_STOP) {
		fk.state = req == IPT_IOC_START ? IPT_STATE_TRACING : IPT_STATE_STOPPED;
		if (req == IPT_IOC_START && fk.start_bytes) {
			fk_produce(0, fk.start_bytes);
			fk_produce(1, fk.start_bytes % FK_SIZE / 3);
		}
		return 0;
	}
	if (req == IPT_IOC_RELEASE) {
		fk.state = 0;
		return 0;
	}
	if (req == IPT_IOC_GET_TRACE) {
		struct ipt_trace_state *ts = arg;
		struct fk_trace *x = fk_trace_of(ts->cpu);
		uint32_t i = ts->cpu;

		if (!x)
			return fail(ENOENT);
		memset(ts, 0, sizeof(*ts));
		ts->size = sizeof(*ts);
		ts->cpu = i;
		ts->state = (uint32_t)fk.state;
		ts->status = (fk.cfg.buffer_flags & IPT_BUFFER_STREAM ? IPT_TS_STREAM : 0) |
			     (x->paused ? IPT_TS_PAUSED : 0);
		ts->bytes_valid = x->captured < FK_SIZE ? x->captured : FK_SIZE;
		ts->buffer_size = FK_SIZE;
		ts->mmap_offset = (uint64_t)i * FK_SIZE;
		ts->bytes_captured = x->captured;
		ts->released = x->released;
		ts->region_size = FK_SIZE / 8;
		ts->nr_gaps = x->nr_gaps;
		ts->gap_bytes = x->gap_bytes;
		ts->paused_tsc = x->paused ? x->pause_tsc : 0;
		ts->tid = fk.thread_mode ? x->tid : 0;
		return 0;
	}
	if (req == IPT_IOC_STREAM_RELEASE) {
		const struct ipt_stream_release *r = arg;
		struct fk_trace *x;

		if (r->size != sizeof(*r) || r->flags || r->reserved0 || r->reserved[0] ||
		    r->reserved[1])
			return fail(EINVAL);
		x = fk_trace_of(r->trace);
		if (!x)
			return fail(ENOENT);
		if (r->released < x->released || r->released > x->captured)
			return fail(EINVAL);
		fk.release_calls++;
		/* a thread that kept migrating: abi.rst, IPT_IOC_STREAM_RELEASE */
		if (fk.release_eagain) {
			fk.release_eagain--;
			return fail(EAGAIN);
		}
		x->released = r->released;
		fk.releases++;
		if (x->paused && x->captured - x->released < FK_SIZE) {
			x->paused = false;
			fk_add_gap(r->trace, x->pause_off, x->pause_tsc, ++fk.tsc,
				   fk.unknown_size ? IPT_GAP_BYTES_UNKNOWN : x->lost);
		}
		return 0;
	}
	if (req == IPT_IOC_GET_GAPS) {
		struct ipt_gaps *g = arg;
		struct fk_trace *x;
		uint64_t k, oldest;
		unsigned int n = 0;

		if (g->size != sizeof(*g) || g->flags || g->reserved0 || g->total || g->oldest ||
		    g->entry_size != sizeof(struct ipt_gap) || (g->nr_entries && !g->entries_ptr))
			return fail(EINVAL);
		x = fk_trace_of(g->trace);
		if (!x)
			return fail(ENOENT);
		oldest = x->nr_gaps > FK_GAP_KEEP ? x->nr_gaps - FK_GAP_KEEP : 0;
		for (k = g->first > oldest ? g->first : oldest; k < x->nr_gaps && n < g->nr_entries;
		     k++, n++)
			((struct ipt_gap *)(uintptr_t)g->entries_ptr)[n] =
				x->gaps[k % FK_GAP_KEEP];
		g->nr_entries = n;
		g->total = x->nr_gaps;
		g->oldest = oldest;
		return 0;
	}
	return fail(ENOTTY);
}

/* ---- a recording consumer ------------------------------------------------ */

#define MAX_GAPS 32

struct rec {
	struct iptcap_stream_files *files;
	struct ipt_gap gaps[MAX_GAPS];
	unsigned int gap_trace[MAX_GAPS];
	unsigned int nr_gaps;
	uint64_t unlisted;
	int fail_data;		/* make the data callback fail with this errno */
	uint64_t calls;
};

static int rec_data(const struct iptcap_stream_trace *tr, uint64_t off, const void *data,
		    size_t len, void *user)
{
	struct rec *r = user;

	r->calls++;
	if (r->fail_data)
		return r->fail_data;
	return iptcap_stream_files_data(tr, off, data, len, r->files);
}

static int rec_gap(const struct iptcap_stream_trace *tr, const struct ipt_gap *g, void *user)
{
	struct rec *r = user;

	if (r->nr_gaps < MAX_GAPS) {
		r->gap_trace[r->nr_gaps] = tr->trace;
		r->gaps[r->nr_gaps++] = *g;
	}
	return 0;
}

static int rec_unlisted(const struct iptcap_stream_trace *tr, uint64_t nr, void *user)
{
	struct rec *r = user;

	(void)tr;
	r->unlisted += nr;
	return 0;
}

static const struct iptcap_stream_ops rec_ops = {
	.data = rec_data,
	.gap = rec_gap,
	.unlisted = rec_unlisted,
};

static char tmpdir[] = "/tmp/test_stream.XXXXXX";

static void clean_dir(void)
{
	const char *names[] = { "cpu0.pt", "cpu1.pt", "cpu2.pt", "cpu3.pt", "thread-100.pt",
				"thread-100.0.pt", "thread-100.1.pt", "thread-100.2.pt",
				"thread-101.pt", "meta.json" };
	char p[256];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", tmpdir, names[i]);
		unlink(p);
	}
}

/* Remove what a record run leaves in @dir, then @dir. */
static void remove_capture(const char *dir)
{
	const char *names[] = { "cpu0.pt", "cpu1.pt", "meta.json", "meta.json.tmp",
				CAPTURE_META_RESERVE, "sideband.jsonl", "vdso0.so" };
	char p[400];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

/*
 * Whether file @name holds trace @t's bytes minus the gaps: @nr ranges of
 * produced bytes [from[i], to[i]).
 */
static bool file_is(const char *name, unsigned int t, const uint64_t *from, const uint64_t *to,
		    unsigned int nr)
{
	char p[256];
	struct stat st;
	unsigned char *b;
	uint64_t off = 0, k;
	unsigned int i;
	bool ok = true;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	fd = open(p, O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		printf("# %s: %s\n", p, strerror(errno));
		return false;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b || read(fd, b, (size_t)st.st_size) != st.st_size)
		ok = false;
	close(fd);
	for (i = 0; ok && i < nr; i++)
		for (k = from[i]; ok && k < to[i]; k++, off++)
			if (off >= (uint64_t)st.st_size || b[off] != gen(t, k)) {
				printf("# %s: byte %llu (produced %llu) wrong or missing\n", name,
				       (unsigned long long)off, (unsigned long long)k);
				ok = false;
			}
	if (ok && off != (uint64_t)st.st_size) {
		printf("# %s: %lld bytes, expected %llu\n", name, (long long)st.st_size,
		       (unsigned long long)off);
		ok = false;
	}
	free(b);
	return ok;
}

static struct iptcap *session(bool per_thread)
{
	struct iptcap_config cfg;
	struct iptcap *ipt;
	char msg[256];

	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.stream_feature = true;
	fk.thread_mode = per_thread;
	fk.unknown_size = false;
	fk.releases = 0;
	fk.release_eagain = 0;
	if (iptcap_open(FAKE_PATH, &ipt))
		return NULL;
	iptcap_config_init(&cfg);
	cfg.buffer_size = FK_SIZE;
	cfg.stream = true;
	cfg.per_thread = per_thread;
	cfg.max_threads = per_thread ? FK_TRACES : 0;
	if (iptcap_configure(ipt, &cfg, msg, sizeof(msg))) {
		printf("# configure: %s\n", msg);
		iptcap_close(ipt);
		return NULL;
	}
	clean_dir();
	return ipt;
}

static void test_config(void)
{
	struct iptcap_config cfg;
	struct ipt_config out;
	struct iptcap_config_error e;
	struct ipt_caps caps;

	memset(&caps, 0, sizeof(caps));
	caps.backend = IPT_BACKEND_SIM;
	caps.nr_cpus = 2;
	caps.max_trace_size = 1 << 22;
	caps.features = IPT_FEAT_TOPA | IPT_FEAT_STREAM;
	iptcap_config_init(&cfg);
	cfg.buffer_size = 1 << 20;
	cfg.stream = true;
	CHECK(!iptcap_config_check(&cfg, &caps, &out, &e) &&
	      (out.buffer_flags & IPT_BUFFER_STREAM) && !out.nr_regions,
	      "config: stream sets IPT_BUFFER_STREAM, nr_regions 0 (the default)");
	cfg.nr_regions = 16;
	CHECK(!iptcap_config_check(&cfg, &caps, &out, &e) && out.nr_regions == 16,
	      "config: nr_regions 16 passes through");
	cfg.nr_regions = 12;
	CHECK(iptcap_config_check(&cfg, &caps, &out, &e) == IPTCAP_ERR_INVALID &&
	      e.field == IPTCAP_FIELD_STREAM, "config: 12 regions (not a power of two) refused");
	cfg.nr_regions = 128;
	CHECK(iptcap_config_check(&cfg, &caps, &out, &e) == IPTCAP_ERR_INVALID,
	      "config: 128 regions refused (max %d)", IPT_STREAM_MAX_REGIONS);
	cfg.nr_regions = 64;
	cfg.buffer_size = 64 * 2 * 4096;
	CHECK(!iptcap_config_check(&cfg, &caps, &out, &e), "config: 64 regions of 2 pages");
	cfg.buffer_size = 64 * 4096;
	CHECK(iptcap_config_check(&cfg, &caps, &out, &e) == IPTCAP_ERR_INVALID,
	      "config: regions of one page refused");
	cfg.nr_regions = 0;
	cfg.stop_on_full = true;
	CHECK(iptcap_config_check(&cfg, &caps, &out, &e) == IPTCAP_ERR_INVALID &&
	      e.field == IPTCAP_FIELD_STREAM, "config: stream with stop_on_full refused");
	cfg.stop_on_full = false;
	caps.features &= ~IPT_FEAT_STREAM;
	CHECK(iptcap_config_check(&cfg, &caps, &out, &e) == IPTCAP_ERR_CAPABILITY &&
	      strstr(e.reason, "IPT_FEAT_STREAM"),
	      "config: stream without IPT_FEAT_STREAM is a missing capability: %s", e.reason);
	cfg.stream = false;
	CHECK(!iptcap_config_check(&cfg, &caps, &out, &e) &&
	      !(out.buffer_flags & IPT_BUFFER_STREAM) && !out.nr_regions,
	      "config: no stream, no stream flag");
	CHECK(!strcmp(iptcap_feature_name(IPT_FEAT_STREAM), "stream"), "feature name 'stream'");
}

/* A trace 10 times its buffer, produced in pieces, drained between: nothing lost. */
static void test_lossless(void)
{
	struct iptcap *ipt = session(false);
	struct iptcap_stream *s = NULL;
	struct iptcap_stream_stats st;
	struct rec r;
	uint64_t total = 10 * FK_SIZE + 1234, done = 0, from[1] = { 0 }, to[2];
	unsigned int i;
	bool ok = true;

	memset(&r, 0, sizeof(r));
	fk.tr[0].exists = fk.tr[2].exists = true;	/* CPU 1 and 3 not in the session */
	CHECK(ipt && !iptcap_stream_files_open(tmpdir, &r.files) &&
	      !iptcap_stream_open(ipt, &rec_ops, &r, &s), "lossless: open");
	if (!s)
		goto out;
	iptcap_start(ipt);
	/* Odd piece sizes: ranges wrap at every place, some exactly at the end. */
	for (i = 0; done < total; i++) {
		uint64_t n = (i % 3 == 0) ? FK_SIZE - 1 : (i % 3 == 1) ? 777 : FK_SIZE / 2 + 1;

		if (n > total - done)
			n = total - done;
		fk_produce(0, n);
		fk_produce(2, n / 2);
		done += n;
		if (iptcap_stream_wait(s, 0) != 1 || iptcap_stream_drain(s))
			ok = false;
	}
	iptcap_stop(ipt);
	fk.state = IPT_STATE_STOPPED;
	ok = ok && !iptcap_stream_finish(s);
	iptcap_stream_stats(s, &st);
	CHECK(ok, "lossless: every wait said ready and every drain passed");
	CHECK(st.traces == 2, "lossless: 2 traces found (CPUs 0 and 2), %u", st.traces);
	CHECK(st.bytes == fk.tr[0].captured + fk.tr[2].captured &&
	      fk.tr[0].captured == total, "lossless: %llu bytes delivered",
	      (unsigned long long)st.bytes);
	CHECK(fk.tr[0].released == total && fk.tr[2].released == fk.tr[2].captured,
	      "lossless: released up to bytes_captured");
	CHECK(!st.gaps && !st.gaps_unlisted && !st.gap_bytes && !r.nr_gaps, "lossless: no gap");
	to[0] = total;
	CHECK(file_is("cpu0.pt", 0, from, to, 1), "lossless: cpu0.pt is the stream, byte for byte");
	to[0] = fk.tr[2].produced;
	CHECK(file_is("cpu2.pt", 2, from, to, 1), "lossless: cpu2.pt is the stream");
	(void)to[1];
out:
	iptcap_stream_close(s);
	i = (unsigned int)iptcap_stream_files_close(r.files);
	CHECK(!i, "lossless: files closed without error");
	iptcap_close(ipt);
}

/* The consumer falls behind: the unit pauses, the release resumes it, a gap is reported. */
static void test_overload(void)
{
	struct iptcap *ipt = session(false);
	struct iptcap_stream *s = NULL;
	struct iptcap_stream_stats st;
	struct rec r;
	uint64_t from[3], to[3];

	memset(&r, 0, sizeof(r));
	fk.tr[1].exists = true;
	if (!ipt || iptcap_stream_files_open(tmpdir, &r.files) ||
	    iptcap_stream_open(ipt, &rec_ops, &r, &s)) {
		CHECK(0, "overload: open");
		goto out;
	}
	iptcap_start(ipt);
	fk_produce(1, 3 * FK_SIZE + 100);	/* 2 buffers + 100 bytes do not fit */
	CHECK(fk.tr[1].paused, "overload: the model paused");
	CHECK(!iptcap_stream_drain(s), "overload: drain");
	CHECK(!fk.tr[1].paused && fk.tr[1].nr_gaps == 1, "overload: the release resumed the unit");
	CHECK(r.nr_gaps == 1 && r.gaps[0].offset == FK_SIZE &&
	      r.gaps[0].bytes_lost == 2 * FK_SIZE + 100 && r.gaps[0].tsc_end > r.gaps[0].tsc_start &&
	      r.gap_trace[0] == 1 && r.gaps[0].cpu == 1,
	      "overload: the gap at offset %llu, %llu bytes lost, handed out in the same drain",
	      r.nr_gaps ? (unsigned long long)r.gaps[0].offset : 0ull,
	      r.nr_gaps ? (unsigned long long)r.gaps[0].bytes_lost : 0ull);
	/* A second pause, still open at the next drain: not handed out until it ends. */
	fk_produce(1, FK_SIZE + 10);
	fk_produce(1, 50);
	CHECK(fk.tr[1].paused, "overload: paused again");
	CHECK(!iptcap_stream_drain(s) && r.nr_gaps == 2 && r.gaps[1].bytes_lost == 60 &&
	      r.gaps[1].offset == 2 * FK_SIZE, "overload: second gap, 60 bytes, at %d",
	      2 * FK_SIZE);
	fk_produce(1, 5000);
	iptcap_stop(ipt);
	CHECK(!iptcap_stream_finish(s), "overload: finish");
	iptcap_stream_stats(s, &st);
	CHECK(st.gaps == 2 && st.gap_bytes == 2 * FK_SIZE + 160 && !st.gaps_unknown &&
	      !st.gaps_unlisted, "overload: stats: 2 gaps, %llu bytes lost",
	      (unsigned long long)st.gap_bytes);
	CHECK(st.bytes + st.gap_bytes == fk.tr[1].produced,
	      "overload: delivered + lost == produced (%llu)",
	      (unsigned long long)fk.tr[1].produced);
	from[0] = 0;
	to[0] = FK_SIZE;
	from[1] = 3 * FK_SIZE + 100;
	to[1] = from[1] + FK_SIZE;
	from[2] = to[1] + 60;
	to[2] = fk.tr[1].produced;
	CHECK(file_is("cpu1.pt", 1, from, to, 3),
	      "overload: cpu1.pt holds what was produced outside the gaps, in order");
out:
	iptcap_stream_close(s);
	iptcap_stream_files_close(r.files);
	iptcap_close(ipt);
}

/*
 * A per-CPU session holding trace 0, streamed through rec_ops into
 * tmpdir's files, started; NULL (one failed point, "@what: open") if it
 * cannot be.  stream_cpu0_done() undoes it, whatever came of it.
 */
static struct iptcap_stream *stream_cpu0(const char *what, struct rec *r, struct iptcap **ipt)
{
	struct iptcap_stream *s = NULL;

	memset(r, 0, sizeof(*r));
	*ipt = session(false);
	fk.tr[0].exists = true;
	if (!*ipt || iptcap_stream_files_open(tmpdir, &r->files) ||
	    iptcap_stream_open(*ipt, &rec_ops, r, &s)) {
		CHECK(0, "%s: open", what);
		return NULL;
	}
	iptcap_start(*ipt);
	return s;
}

static void stream_cpu0_done(struct iptcap_stream *s, struct rec *r, struct iptcap *ipt)
{
	iptcap_stream_close(s);
	if (r->files)
		iptcap_stream_files_close(r->files);
	iptcap_close(ipt);
}

/* Open gaps wait; gaps the kernel no longer itemises are counted; unknown sizes. */
static void test_gap_records(void)
{
	struct iptcap *ipt;
	struct iptcap_stream_stats st;
	struct rec r;
	struct iptcap_stream *s = stream_cpu0("gaps", &r, &ipt);
	unsigned int i;

	if (!s)
		goto out;
	/* 5 closed gaps recorded at once: the kernel keeps the last 3. */
	for (i = 0; i < 5; i++)
		fk_add_gap(0, 0, 10 + i, 20 + i, i == 4 ? IPT_GAP_BYTES_UNKNOWN : 100);
	/* and one still open */
	fk_add_gap(0, 0, 30, 0, IPT_GAP_BYTES_UNKNOWN);
	CHECK(!iptcap_stream_drain(s), "gaps: drain");
	CHECK(r.unlisted == 3 && r.nr_gaps == 2 && r.gaps[0].tsc_start == 13 &&
	      r.gaps[1].tsc_start == 14,
	      "gaps: 3 not itemised, the 2 closed ones the kernel kept handed out, the open one not (%llu, %u)",
	      (unsigned long long)r.unlisted, r.nr_gaps);
	iptcap_stop(ipt);
	CHECK(!iptcap_stream_finish(s) && r.nr_gaps == 3 && r.gaps[2].tsc_end == 0,
	      "gaps: finish hands out the open gap");
	iptcap_stream_stats(s, &st);
	CHECK(st.gaps == 3 && st.gaps_unlisted == 3 && st.gaps_unknown == 2 &&
	      st.gap_bytes == 400, "gaps: stats 3 itemised, 3 unlisted, 2 of unknown size, 400 bytes");
out:
	stream_cpu0_done(s, &r, ipt);
}

/* A failing sink: the error comes back, what it refused stays unreleased. */
static void test_sink_error(void)
{
	struct iptcap *ipt = session(false);
	struct iptcap_stream *s = NULL;
	struct rec r;
	enum iptcap_err err;

	memset(&r, 0, sizeof(r));
	fk.tr[0].exists = true;
	if (!ipt || iptcap_stream_open(ipt, &rec_ops, &r, &s)) {
		CHECK(0, "sink error: open");
		goto out;
	}
	iptcap_start(ipt);
	fk_produce(0, 1000);
	r.fail_data = ENOSPC;
	err = iptcap_stream_drain(s);
	CHECK(err == IPTCAP_ERR_NO_SPACE && iptcap_stream_errno(s) == ENOSPC,
	      "sink error: ENOSPC comes back as IPTCAP_ERR_NO_SPACE (%s)", iptcap_strerror(err));
	CHECK(fk.tr[0].released == 0, "sink error: nothing released");
	r.fail_data = 0;
	fk.tr[0].released = 0;
	/* The kernel reporting more ready than the buffer holds is an ABI error. */
	fk.tr[0].captured = FK_SIZE + 1;
	CHECK(iptcap_stream_drain(s) == IPTCAP_ERR_ABI, "sink error: ready > buffer is IPTCAP_ERR_ABI");
out:
	iptcap_stream_close(s);
	iptcap_close(ipt);
}

/*
 * A release the kernel could not deliver to a migrating thread (EAGAIN,
 * nothing changed) is tried again: a few such answers lose nothing; one
 * that never ends is an error after IPTCAP_RELEASE_TRIES calls, not a
 * loop without end.
 */
static void test_release_eagain(void)
{
	struct iptcap *ipt;
	struct rec r;
	struct iptcap_stream *s = stream_cpu0("release EAGAIN", &r, &ipt);
	enum iptcap_err err;

	if (!s)
		goto out;
	fk_produce(0, 1000);
	fk.release_eagain = 5;
	fk.release_calls = 0;
	err = iptcap_stream_drain(s);
	CHECK(!err && fk.tr[0].released == 1000 && fk.release_calls == 6,
	      "release EAGAIN: 5 EAGAINs then the release: drained, released 1000 (%s, %llu, "
	      "%u calls)", iptcap_strerror(err), (unsigned long long)fk.tr[0].released,
	      fk.release_calls);
	fk_produce(0, 1000);
	fk.release_eagain = 1000;
	fk.release_calls = 0;
	err = iptcap_stream_drain(s);
	CHECK(err == IPTCAP_ERR_IO && iptcap_last_errno(ipt) == EAGAIN &&
	      fk.release_calls == IPTCAP_RELEASE_TRIES && fk.tr[0].released == 1000,
	      "release EAGAIN for good: an error after %u calls (%s, %u calls, released %llu)",
	      IPTCAP_RELEASE_TRIES, iptcap_strerror(err), fk.release_calls,
	      (unsigned long long)fk.tr[0].released);
	fk.release_eagain = 0;
out:
	stream_cpu0_done(s, &r, ipt);
}

/* Per-thread: traces are found as they are handed out; files are named per thread. */
static void test_threads(void)
{
	struct iptcap *ipt = session(true);
	struct iptcap_stream *s = NULL;
	struct iptcap_stream_stats st;
	struct rec r;
	uint64_t from[1] = { 0 }, to[1];
	uint64_t w;
	int we;

	memset(&r, 0, sizeof(r));
	if (!ipt || iptcap_stream_files_open(tmpdir, &r.files) ||
	    iptcap_stream_open(ipt, &rec_ops, &r, &s)) {
		CHECK(0, "threads: open");
		goto out;
	}
	iptcap_start(ipt);
	CHECK(!iptcap_stream_drain(s), "threads: drain with no trace yet");
	fk.tr[0].exists = true;
	fk.tr[0].tid = 100;
	fk_produce(0, 3 * FK_SIZE / 4);
	CHECK(!iptcap_stream_drain(s), "threads: drain");
	fk.tr[1].exists = fk.tr[2].exists = true;
	fk.tr[1].tid = 101;
	fk.tr[2].tid = 100;	/* the same thread, traced again */
	fk_produce(1, 5000);
	fk_produce(2, 7000);
	fk_produce(0, FK_SIZE);
	iptcap_stop(ipt);
	CHECK(!iptcap_stream_finish(s), "threads: finish");
	iptcap_stream_stats(s, &st);
	CHECK(st.traces == 3, "threads: 3 traces found, %u", st.traces);
	to[0] = fk.tr[0].produced;
	CHECK(file_is("thread-100.pt", 0, from, to, 1), "threads: thread-100.pt");
	to[0] = fk.tr[1].produced;
	CHECK(file_is("thread-101.pt", 1, from, to, 1), "threads: thread-101.pt");
	to[0] = fk.tr[2].produced;
	CHECK(file_is("thread-100.2.pt", 2, from, to, 1),
	      "threads: thread-100.2.pt for the thread's later trace");
	CHECK(!strcmp(iptcap_stream_files_get(r.files, 2, &w, &we), "thread-100.2.pt") &&
	      w == 7000 && !we, "threads: files_get names trace 2 and its bytes");
out:
	iptcap_stream_close(s);
	iptcap_stream_files_close(r.files);
	iptcap_close(ipt);
}

/*
 * Per-thread: a thread's first trace got no byte, its later one did.  The
 * sink names the later one thread-TID.pt; the empty file made at collect
 * time must take another name, never truncate it.
 */
static void test_threads_empty_first(void)
{
	struct iptcap *ipt = session(true);
	struct iptcap_stream *s = NULL;
	struct capture c;
	struct rec r;
	uint64_t from[1] = { 0 }, to[1];
	int rc = -1;

	memset(&r, 0, sizeof(r));
	memset(&c, 0, sizeof(c));
	if (!ipt || iptcap_stream_files_open(tmpdir, &r.files) ||
	    iptcap_stream_open(ipt, &rec_ops, &r, &s)) {
		CHECK(0, "threads, empty first: open");
		goto out;
	}
	iptcap_start(ipt);
	fk.tr[0].exists = fk.tr[1].exists = true;
	fk.tr[0].tid = 100;	/* attached, nothing traced */
	fk.tr[1].tid = 100;	/* the same thread again (reattached, or its id reused) */
	fk_produce(1, 7000);
	iptcap_stop(ipt);
	CHECK(!iptcap_stream_finish(s), "threads, empty first: finish");
	c.dir = tmpdir;
	c.per_thread = true;
	c.stream = true;
	c.complete = true;
	c.config.max_threads = FK_TRACES;
	c.meta_reserve = 8192;
	c.nr_slots = FK_TRACES;
	c.traces = calloc(FK_TRACES, sizeof(*c.traces));
	c.slots = calloc(FK_TRACES, sizeof(*c.slots));
	if (c.traces && c.slots)
		rc = capture_collect_stream(ipt, &c, r.files);
	CHECK(rc == 0 && c.complete && c.nr_traces == 2, "threads, empty first: collected, complete");
	CHECK(c.nr_traces == 2 && strcmp(c.traces[0].file, c.traces[1].file) &&
	      !strcmp(c.traces[1].file, "thread-100.pt") &&
	      !strcmp(c.traces[0].file, "thread-100.0.pt"),
	      "threads, empty first: two files, the data one thread-100.pt, the empty one "
	      "thread-100.0.pt (%s, %s)", c.traces[0].file, c.traces[1].file);
	to[0] = 7000;
	CHECK(file_is("thread-100.pt", 1, from, to, 1),
	      "threads, empty first: the later trace's data survives collecting the empty one");
	to[0] = 0;
	CHECK(file_is("thread-100.0.pt", 0, from, to, 0), "threads, empty first: the empty file");
out:
	free(c.traces);
	free(c.slots);
	iptcap_stream_close(s);
	iptcap_stream_files_close(r.files);
	iptcap_close(ipt);
}

/* The sink creates with O_EXCL: it never truncates a file already there. */
static void test_files_excl(void)
{
	struct iptcap_stream_files *f = NULL;
	struct iptcap_stream_trace tr = { .trace = 3, .cpu = 3, .tid = 0 };
	struct stat st;
	char p[300];
	int fd, e, made;

	clean_dir();
	snprintf(p, sizeof(p), "%s/cpu3.pt", tmpdir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	made = fd >= 0 && write(fd, "keep", 4) == 4;
	if (fd >= 0)
		close(fd);
	CHECK(made, "excl: a cpu3.pt exists");
	if (iptcap_stream_files_open(tmpdir, &f)) {
		CHECK(0, "excl: open the sink");
		return;
	}
	e = iptcap_stream_files_data(&tr, 0, "x", 1, f);
	CHECK(e == EEXIST, "excl: writing cpu3 fails with EEXIST (%s)", strerror(e));
	e = iptcap_stream_files_close(f);
	CHECK(e == 0, "excl: close (%s)", strerror(e));
	CHECK(!stat(p, &st) && st.st_size == 4, "excl: cpu3.pt kept its 4 bytes");
	clean_dir();
}

/* The release and gap calls themselves. */
static void test_calls(void)
{
	struct iptcap *ipt = session(false);
	struct ipt_gap g[2];
	uint64_t total = 9, oldest = 9;
	unsigned int got = 9;

	fk.tr[0].exists = true;
	fk_produce(0, 100);
	CHECK(ipt && iptcap_stream_release(ipt, 0, 101) == IPTCAP_ERR_INVALID,
	      "calls: release beyond bytes_captured: IPTCAP_ERR_INVALID");
	CHECK(ipt && !iptcap_stream_release(ipt, 0, 50) &&
	      iptcap_stream_release(ipt, 0, 49) == IPTCAP_ERR_INVALID,
	      "calls: release backwards: IPTCAP_ERR_INVALID");
	CHECK(ipt && iptcap_stream_release(ipt, 3, 0) == IPTCAP_ERR_NO_SUCH_CPU,
	      "calls: release of a CPU outside the session: IPTCAP_ERR_NO_SUCH_CPU");
	CHECK(ipt && !iptcap_get_gaps(ipt, 0, 0, g, 2, &got, &total, &oldest) && !got && !total &&
	      !oldest, "calls: no gaps");
	iptcap_close(ipt);
}

/* ---- ipttool record on the model ---------------------------------------- */

static int64_t jint(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
}

static const char *jstr(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

static char errtext[8192];

/* ipttool record -a --no-sideband -q --size 64K -o DIR [@extra] -- true; stderr in errtext. */
static int run_record(const char *dir, const char *extra)
{
	struct ipttool t = { .device = FAKE_PATH };
	char *argv[16], errpath[300];
	int argc = 0, rc, se, fd;
	ssize_t n;

	argv[argc++] = "record";
	argv[argc++] = "-a";
	argv[argc++] = "--no-sideband";
	argv[argc++] = "--size";
	argv[argc++] = "64K";
	argv[argc++] = "-o";
	argv[argc++] = (char *)dir;
	static char xbuf[256];
	char *save = NULL, *w;

	/* @extra: options separated by spaces */
	snprintf(xbuf, sizeof(xbuf), "%s", extra ? extra : "");
	for (w = strtok_r(xbuf, " ", &save); w && argc < 12; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc++] = "--";
	argv[argc++] = "true";
	argv[argc] = NULL;
	snprintf(errpath, sizeof(errpath), "%s.err", dir);
	fflush(stderr);
	se = dup(2);
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 2);
	close(fd);
	rc = cmd_record(&t, argc, argv);
	fflush(stderr);
	dup2(se, 2);
	close(se);
	fd = open(errpath, O_RDONLY);
	n = fd >= 0 ? read(fd, errtext, sizeof(errtext) - 1) : -1;
	errtext[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	unlink(errpath);
	return rc;
}

static struct json_object *read_meta(const char *dir)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/meta.json", dir);
	return json_object_from_file(p);
}

/*
 * The fake kernel as a streamed recording finds it: no trace, stream
 * feature on, gap sizes known, @start_bytes written into traces 0 and 1
 * at START.
 */
static void fk_record_reset(uint64_t start_bytes)
{
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.record_mode = true;
	fk.stream_feature = true;
	fk.unknown_size = false;
	fk.start_bytes = start_bytes;
}

/*
 * A child process running 'record -a -o @dir -- sleep 100' on the fake
 * kernel, its output to /dev/null, in a process group of its own if
 * @own_group; its pid (or -1).
 */
static pid_t fork_record(const char *dir, bool own_group)
{
	struct ipttool t = { .device = FAKE_PATH };
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "record", "-a", "--no-sideband", "--size", "64K", "-o", (char *)dir,
				 "-q", "--", "sleep", "100", NULL };
		int fd = open("/dev/null", O_WRONLY);

		if (own_group)
			setpgid(0, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		_exit(cmd_record(&t, 11, argv));
	}
	return pid;
}

/*
 * SIGHUP (the terminal closed) ends a recording as SIGINT does: the
 * capture is written, complete.  The recording runs "sleep 100" in a
 * child process of the test; the test waits for its first meta.json (the
 * moment record says it may be signalled), sends SIGHUP, and expects a
 * clean exit, not death by the signal.
 */
static void test_record_sighup(void)
{
	char dir[300], meta[320];
	struct json_object *m;
	int i, wst = 0;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/hup", tmpdir);
	snprintf(meta, sizeof(meta), "%s/meta.json", dir);
	fk_record_reset(1000);
	pid = fork_record(dir, false);
	/* a bounded wait on a state (30 s, never reached when all is well) */
	for (i = 0; pid > 0 && i < 3000 && access(meta, F_OK); i++)
		usleep(10000);
	CHECK(pid > 0 && !access(meta, F_OK), "record SIGHUP: the capture is begun");
	if (pid > 0) {
		kill(pid, SIGHUP);
		waitpid(pid, &wst, 0);
	}
	m = read_meta(dir);
	CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0 && m &&
	      json_object_get_boolean(jget(m, "complete")),
	      "record SIGHUP: ends the recording, exit 0, capture complete (%s %d)",
	      WIFEXITED(wst) ? "exit" : "signal", WIFEXITED(wst) ? WEXITSTATUS(wst) :
	      WTERMSIG(wst));
	json_object_put(m);
	fk.record_mode = false;
	fk.start_bytes = 0;
	remove_capture(dir);
}

static void ignore_signal(int sig)
{
	(void)sig;
}

/*
 * The command's process, forked while the recorder catches the stop
 * signals (blocked around fork() as record does): one sent to it before
 * it has its default action back (a terminal's hangup reaches the whole
 * process group) still ends it, instead of running the recorder's
 * handler, lost, and leaving record waiting on a command it believes it
 * stopped.
 */
static void test_child_signals(void)
{
	const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = ignore_signal }, old[3];
	sigset_t stopset, oldmask;
	unsigned int i;
	int wst = 0;
	pid_t pid;

	sigemptyset(&stopset);
	for (i = 0; i < 3; i++) {
		sigaction(sigs[i], &sa, &old[i]);
		sigaddset(&stopset, sigs[i]);
	}
	for (i = 0; i < 3; i++) {
		sigprocmask(SIG_BLOCK, &stopset, &oldmask);
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			kill(getpid(), sigs[i]);	/* pending: blocked */
			record_child_signals(&oldmask);
			_exit(0);
		}
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		wst = 0;
		if (pid > 0)
			waitpid(pid, &wst, 0);
		CHECK(pid > 0 && WIFSIGNALED(wst) && WTERMSIG(wst) == sigs[i],
		      "the command's process: %s, sent before its exec, ends it (%s %d)",
		      strsignal(sigs[i]), WIFSIGNALED(wst) ? "signal" : "exit",
		      WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
	}
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
}

/*
 * A streamed recording killed (SIGKILL) before it ends: its meta.json,
 * rewritten as traces and gaps appear, still lists cpu0.pt and the gap
 * of its overload, and says the recording did not finish.  The recorder
 * and its "sleep 100" run in a process group of their own, killed whole.
 */
static void test_record_killed(void)
{
	char dir[300], meta[320];
	struct json_object *m = NULL;
	int i, wst = 0;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/killed", tmpdir);
	snprintf(meta, sizeof(meta), "%s/meta.json", dir);
	fk_record_reset(3 * FK_SIZE + 100);
	pid = fork_record(dir, true);
	/* a bounded wait on a state (30 s, never reached when all is well) */
	for (i = 0; pid > 0 && i < 3000; i++) {
		m = json_object_from_file(meta);
		if (m && jget(m, "traces.0.gaps.0"))
			break;
		json_object_put(m);
		m = NULL;
		usleep(10000);
	}
	if (pid > 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &wst, 0);
	}
	json_object_put(m);
	m = read_meta(dir);
	CHECK(m && !json_object_get_boolean(jget(m, "complete")) &&
	      !strcmp(jstr(m, "incomplete_reason"), CAPTURE_UNFINISHED) &&
	      !strcmp(jstr(m, "traces.0.file"), "cpu0.pt") &&
	      jint(m, "traces.0.gaps.0.offset") == FK_SIZE &&
	      jint(m, "traces.0.gaps.0.bytes_lost") == 2 * FK_SIZE + 100,
	      "record killed: meta.json lists cpu0.pt and its gap (offset %lld), \"%s\"",
	      m ? (long long)jint(m, "traces.0.gaps.0.offset") : -1ll,
	      m ? jstr(m, "incomplete_reason") : "no meta.json");
	json_object_put(m);
	fk.record_mode = false;
	fk.start_bytes = 0;
	remove_capture(dir);
}

static void test_record(void)
{
	char dir[300];
	struct json_object *m;
	uint64_t from[2], to[2];
	int rc;

	snprintf(dir, sizeof(dir), "%s/cap", tmpdir);
	/* Lossless: half a buffer on CPU 0, a sixth on CPU 1. */
	fk_record_reset(FK_SIZE / 2);
	pt_fsyncs = 0;
	rc = run_record(dir, NULL);
	m = read_meta(dir);
	CHECK(rc == 0, "record: a stream without gaps exits 0 (%d): %s", rc, errtext);
	CHECK(pt_fsyncs == 2, "record: both trace files fsync'd (%u)", pt_fsyncs);
	CHECK(m && !strcmp(jstr(m, "config.buffer"), "stream") &&
	      json_object_get_boolean(jget(m, "stream.enabled")) && !jget(m, "stream.fallback") &&
	      jint(m, "stream.gaps") == 0 && jint(m, "stream.bytes") == FK_SIZE / 2 + FK_SIZE / 6,
	      "record: meta.json: buffer \"stream\", stream.enabled, no gap, %lld bytes",
	      m ? (long long)jint(m, "stream.bytes") : -1ll);
	CHECK(m && jint(m, "traces.0.size") == FK_SIZE / 2 &&
	      json_object_array_length(jget(m, "traces.0.gaps")) == 0 &&
	      jint(m, "traces.0.gaps_unlisted") == 0, "record: traces[0]: size, empty gaps");
	from[0] = 0;
	to[0] = FK_SIZE / 2;
	CHECK(file_is("cap/cpu0.pt", 0, from, to, 1), "record: cap/cpu0.pt is the stream");
	to[0] = FK_SIZE / 6;
	CHECK(file_is("cap/cpu1.pt", 1, from, to, 1), "record: cap/cpu1.pt is the stream");
	json_object_put(m);

	/* The disk fails the trace files' fsync: incomplete, said, exit 1. */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fail_pt_fsync = EIO;
	rc = run_record(dir, NULL);
	fail_pt_fsync = 0;
	m = read_meta(dir);
	CHECK(rc == 1 && m && !json_object_get_boolean(jget(m, "complete")) &&
	      strstr(jstr(m, "incomplete_reason"), "cpu0.pt") &&
	      strstr(jstr(m, "incomplete_reason"), strerror(EIO)),
	      "record: a trace file's failed fsync: exit 1, meta.json incomplete and why (%d, %s)",
	      rc, m ? jstr(m, "incomplete_reason") : "no meta.json");
	json_object_put(m);

	/* Overload: three buffers at once on CPU 0, a gap of two and 100 bytes. */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.start_bytes = 3 * FK_SIZE + 100;
	rc = run_record(dir, NULL);
	m = read_meta(dir);
	CHECK(rc == 1 && strstr(errtext, "1 gap: the consumer fell behind"),
	      "record: a gap makes the exit 1 and is named: %s", errtext);
	CHECK(m && jint(m, "stream.gaps") == 1 && jint(m, "stream.gap_bytes") == 2 * FK_SIZE + 100 &&
	      jint(m, "traces.0.gaps.0.offset") == FK_SIZE &&
	      jint(m, "traces.0.gaps.0.bytes_lost") == 2 * FK_SIZE + 100 &&
	      jint(m, "traces.0.gaps.0.tsc_start") > 0 &&
	      jint(m, "traces.0.gaps.0.tsc_end") > jint(m, "traces.0.gaps.0.tsc_start") &&
	      jint(m, "traces.0.gaps.0.cpu") == 0 && jint(m, "traces.0.gap_bytes") == 2 * FK_SIZE + 100,
	      "record: meta.json: the gap's offset, TSCs, bytes_lost, cpu");
	to[0] = FK_SIZE;
	CHECK(file_is("cap/cpu0.pt", 0, from, to, 1), "record: cpu0.pt holds what came before the gap");
	json_object_put(m);

	/* Silicon: a gap of unknown size is null. */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.unknown_size = true;
	rc = run_record(dir, NULL);
	m = read_meta(dir);
	CHECK(rc == 1 && m && jget(m, "traces.0.gaps.0") && !jget(m, "traces.0.gaps.0.bytes_lost") &&
	      jint(m, "stream.gaps_of_unknown_size") == 1,
	      "record: a gap of unknown size: bytes_lost null");
	json_object_put(m);
	fk.unknown_size = false;

	/* --ring: no streaming asked for. */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.start_bytes = 0;
	rc = run_record(dir, "--ring");
	m = read_meta(dir);
	CHECK(rc == 0 && m && !strcmp(jstr(m, "config.buffer"), "ring") &&
	      !json_object_get_boolean(jget(m, "stream.enabled")) && !jget(m, "stream.fallback") &&
	      !(fk.cfg.buffer_flags & IPT_BUFFER_STREAM), "record --ring: a ring, not streamed");
	json_object_put(m);

	/* An older ipt.ko: one line, a ring, meta.json says why. */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.stream_feature = false;
	rc = run_record(dir, NULL);
	m = read_meta(dir);
	CHECK(rc == 0 && strstr(errtext, "cannot stream (no IPT_FEAT_STREAM)"),
	      "record on a kernel without streaming: says so: %s", errtext);
	CHECK(m && !strcmp(jstr(m, "config.buffer"), "ring") &&
	      strstr(jstr(m, "stream.fallback"), "IPT_FEAT_STREAM"),
	      "record on a kernel without streaming: meta.json stream.fallback, a ring");
	json_object_put(m);
	rc = run_record(dir, "--regions=4");
	CHECK(rc == 2, "record --regions on a kernel without streaming: a usage error");
	fk.stream_feature = true;

	/* A small buffer: fewer regions by default; too small: a ring, said once. */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.start_bytes = 0;
	rc = run_record(dir, "--size=16K");
	CHECK(rc == 0 && (fk.cfg.buffer_flags & IPT_BUFFER_STREAM) && fk.cfg.nr_regions == 2 &&
	      fk.cfg.buffer_size == 16384,
	      "record --size 16K: streamed in 2 regions of 8K (got %u regions): %s",
	      fk.cfg.nr_regions, errtext);
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	rc = run_record(dir, "--size=8K");
	m = read_meta(dir);
	CHECK(rc == 0 && !(fk.cfg.buffer_flags & IPT_BUFFER_STREAM) &&
	      strstr(errtext, "too small to stream") && m &&
	      strstr(jstr(m, "stream.fallback"), "too small to stream"),
	      "record --size 8K: too small to stream, a ring, said once and in meta.json: %s",
	      errtext);
	json_object_put(m);
	rc = run_record(dir, "--size=8K --regions=2");
	CHECK(rc == 2, "record --size 8K --regions 2 (asked for): a usage error, no fallback");

	/* A kernel that streams, but refuses this session with EOPNOTSUPP: a ring, said once. */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	fk.stream_eopnotsupp = true;
	rc = run_record(dir, NULL);
	m = read_meta(dir);
	CHECK(rc == 0 && strstr(errtext, "(EOPNOTSUPP): a ring") && m &&
	      !strcmp(jstr(m, "config.buffer"), "ring") &&
	      strstr(jstr(m, "stream.fallback"), "EOPNOTSUPP") &&
	      !(fk.cfg.buffer_flags & IPT_BUFFER_STREAM),
	      "record where the kernel refuses to stream this session (EOPNOTSUPP): a ring, "
	      "said once and in meta.json: %s", errtext);
	json_object_put(m);
	/* the same with a buffer small enough for fewer regions than the default */
	memset(fk.tr, 0, sizeof(fk.tr));
	fk.state = 0;
	rc = run_record(dir, "--size=16K");
	CHECK(rc == 0 && strstr(errtext, "(EOPNOTSUPP): a ring") &&
	      !(fk.cfg.buffer_flags & IPT_BUFFER_STREAM) && !fk.cfg.nr_regions,
	      "record --size 16K where the kernel refuses to stream (EOPNOTSUPP): a ring: %s",
	      errtext);
	fk.stream_eopnotsupp = false;
	fk.record_mode = false;
	snprintf(dir, sizeof(dir), "%s/cap", tmpdir);
	remove_capture(dir);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_config();
	test_calls();
	test_lossless();
	test_overload();
	test_gap_records();
	test_sink_error();
	test_release_eagain();
	test_threads();
	test_threads_empty_first();
	test_files_excl();
	test_record();
	test_record_sighup();
	test_child_signals();
	test_record_killed();
	clean_dir();
	rmdir(tmpdir);
	return tap_done();
}

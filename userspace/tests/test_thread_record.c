// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread recording on the host, without ipt.ko: like
 * test_sideband_record, this program defines open(), ioctl() and mmap(),
 * so that libiptcap's calls on "/dev/ipt-test" reach a small model of the
 * driver, here of a per-thread session (IPT_MODE_THREAD, ATTACH, DETACH,
 * GET_TRACE by trace index).  The model's state lives in shared memory,
 * so that the child 'ipttool record -- PROG' forks attaches itself in it
 * exactly as it does on /dev/ipt.  The "unit" writes a pattern into a
 * trace when its thread is attached while tracing, or at start.
 *
 * Checked: 'ipttool record -- prog' (the child's self-attach, inherit,
 * the file per thread, meta.json with "mode":"thread", the program's exit
 * status, an exec failure), -p (attach, ESRCH, EPERM with its message),
 * a module without per-thread mode, 'ipttool info', and the
 * drpttracer-shaped API of libiptcap, running the example of
 * Documentation/libiptcap.rst.  With IPT_TEST_REAL_PT=FILE (capture-tests
 * in the VM) the example also runs on the real /dev/ipt and leaves the
 * thread's PT bytes in FILE.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../ipttool/ipttool.h"
#include "json_path.h"
#include "tap.h"

/* CHECK evaluates its condition twice: this one once (conditions here call the library). */
#define CHECK1(cond, ...) do {						\
	bool c1_ = (cond);						\
	CHECK(c1_, __VA_ARGS__);					\
	if (!c1_)							\
		printf("#   condition: %s\n", #cond);			\
} while (0)

#define FAKE_PATH "/dev/ipt-test"
#define FAKE_MMAP
#include "fake_ipt.h"

#define FAKE_MAX 64

/* The model, in memory shared with forked children. */
struct fake {
	int old_module;		/* behave like a module before per-thread mode */
	int eperm_tid;		/* a "thread of another user" */
	int eperm_configure;	/* over the locked-memory limit */
	int state;
	unsigned int configures;
	struct ipt_config cfg;
	uint64_t size;
	unsigned int max, nr;
	struct {
		uint32_t tid, flags;
		uint64_t status, bytes;
	} tr[FAKE_MAX];
};

static struct fake *fk;
static int fake_mem = -1;
static unsigned char *fake_buf;

static int fake_open(void)
{
	fake_fd = memfd_create("ipt-test", MFD_CLOEXEC);
	return fake_fd;
}

/* The unit writes trace @i: (i + 2) pages of the byte 0x50 + i. */
static void fake_write(unsigned int i)
{
	uint64_t n = (uint64_t)(i + 2) * 4096;

	if (n > fk->size)
		n = fk->size;
	memset(fake_buf + i * fk->size, 0x50 + (int)i, n);
	fk->tr[i].bytes = n;
}

static int fail(int e)
{
	errno = e;
	return -1;
}

static int fake_ioctl(unsigned long req, void *arg)
{
	unsigned int i;

	if (req == IPT_IOC_GET_CAPS) {
		struct ipt_caps *c = arg;

		fake_caps(c, 0x8c);
		c->stepping = 1;
		c->features = IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI | IPT_FEAT_MTC | IPT_FEAT_PSB_CYC;
		c->mtc_freq_mask = 0x249;
		c->cyc_thresh_mask = 0x1fff;
		c->psb_freq_mask = 0x3f;
		c->nr_cpus = 2;
		c->max_topa_order = 22;
		c->max_trace_size = 1 << 22;
		c->cpuid_15.eax = 2;
		c->cpuid_15.ebx = 176;
		c->nom_freq = 24;
		return 0;
	}
	if (req == IPT_IOC_CONFIGURE) {
		struct ipt_config *cfg = arg;

		if (fk->state)
			return fail(EBUSY);
		if (fk->eperm_configure)
			return fail(EPERM);
		if (cfg->mode != IPT_MODE_THREAD || fk->old_module || !cfg->max_threads ||
		    cfg->max_threads > FAKE_MAX || cfg->flags || cfg->cpu_mask_ptr)
			return fail(EINVAL);
		fk->cfg = *cfg;
		fk->size = cfg->buffer_size;
		fk->max = cfg->max_threads;
		fk->nr = 0;
		memset(fk->tr, 0, sizeof(fk->tr));
		fake_mem = memfd_create("ipt-test-buffer", MFD_CLOEXEC);
		if (fake_mem < 0 || ftruncate(fake_mem, (off_t)(fk->size * fk->max)))
			return fail(ENOMEM);
		fake_buf = mmap(NULL, fk->size * fk->max, PROT_READ | PROT_WRITE, MAP_SHARED,
				fake_mem, 0);
		if (fake_buf == MAP_FAILED)
			return fail(ENOMEM);
		fk->state = IPT_STATE_CONFIGURED;
		fk->configures++;
		return 0;
	}
	if (req == IPT_IOC_ATTACH) {
		struct ipt_attach *a = arg;
		uint32_t tid;

		if (fk->old_module)
			return fail(ENOTTY);
		if (a->size < IPT_ATTACH_SIZE_VER0 || !fk->state || a->flags & ~IPT_ATTACH_INHERIT)
			return fail(EINVAL);
		tid = a->tid ? a->tid : (uint32_t)syscall(SYS_gettid);
		if (a->tid && (int)a->tid == fk->eperm_tid)
			return fail(EPERM);
		if (a->tid && kill((pid_t)a->tid, 0) && errno == ESRCH)
			return fail(ESRCH);
		for (i = 0; i < fk->nr; i++)
			if (fk->tr[i].tid == tid && !(fk->tr[i].status & IPT_TS_DETACHED))
				return fail(EEXIST);
		if (fk->nr == fk->max)
			return fail(ENOSPC);
		i = fk->nr++;
		fk->tr[i].tid = tid;
		fk->tr[i].flags = (uint32_t)a->flags;
		fk->tr[i].status = IPT_TS_THREAD | (a->flags & IPT_ATTACH_INHERIT ? IPT_TS_INHERIT : 0);
		if (fk->state == IPT_STATE_TRACING)
			fake_write(i);
		a->trace = i;
		return 0;
	}
	if (req == IPT_IOC_DETACH) {
		struct ipt_detach *d = arg;

		if (d->trace >= fk->nr)
			return fail(ENOENT);
		if (fk->tr[d->trace].status & IPT_TS_DETACHED)
			return fail(ESRCH);
		fk->tr[d->trace].status |= IPT_TS_DETACHED;
		return 0;
	}
	if (req == IPT_IOC_START) {
		if (fk->state != IPT_STATE_CONFIGURED && fk->state != IPT_STATE_STOPPED)
			return fail(EINVAL);
		for (i = 0; i < fk->nr; i++)
			if (!fk->tr[i].bytes)
				fake_write(i);
		fk->state = IPT_STATE_TRACING;
		return 0;
	}
	if (req == IPT_IOC_STOP) {
		if (fk->state != IPT_STATE_TRACING)
			return fail(EINVAL);
		fk->state = IPT_STATE_STOPPED;
		return 0;
	}
	if (req == IPT_IOC_RELEASE) {
		if (fk->state == IPT_STATE_TRACING)
			return fail(EBUSY);
		if (!fk->state)
			return fail(EINVAL);
		munmap(fake_buf, fk->size * fk->max);
		close(fake_mem);
		fake_mem = -1;
		fk->state = IPT_STATE_IDLE;
		return 0;
	}
	if (req == IPT_IOC_GET_TRACE) {
		struct ipt_trace_state *t = arg;
		unsigned int idx = t->cpu;

		if (!fk->state)
			return fail(EINVAL);
		if (idx >= fk->nr)
			return fail(ENOENT);
		memset(t, 0, sizeof(*t));
		t->size = sizeof(*t);
		t->cpu = idx;
		t->state = (uint32_t)fk->state;
		t->buffer_size = fk->size;
		t->mmap_offset = idx * fk->size;
		t->status = fk->tr[idx].status;
		t->head = t->bytes_valid = t->bytes_captured = fk->tr[idx].bytes;
		t->tid = fk->tr[idx].tid;
		t->parent = IPT_TRACE_NONE;
		t->switches = 1;
		return 0;
	}
	return fail(ENOTTY);
}

/* Trace i's buffer, at i * size of the device, is at the same offset of fake_mem. */
static int fake_map(size_t len, off_t *off)
{
	if (!fk->size || *off % fk->size || (uint64_t)*off / fk->size >= fk->max ||
	    len != fk->size)
		return -1;
	return fake_mem;
}

/* ---- helpers ---------------------------------------------------------------- */

static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static char text[1 << 18];
static char errfile[600];

/* Run a command function with stdout and stderr into @text (stderr first). */
static int run_captured(int (*fn)(struct ipttool *, int, char **), struct ipttool *t, char **argv)
{
	static char out[sizeof(text)];
	char outfile[700];
	int argc = 0, rc, so, se, fd;

	while (argv[argc])
		argc++;
	snprintf(outfile, sizeof(outfile), "%s.out", errfile);
	fflush(stdout);
	fflush(stderr);
	so = dup(1);
	se = dup(2);
	fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 2);
	close(fd);
	fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 1);
	close(fd);
	rc = fn(t, argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	slurp(errfile, text, sizeof(text));
	slurp(outfile, out, sizeof(out));
	strncat(text, out, sizeof(text) - strlen(text) - 1);
	return rc;
}

static void show(void)
{
	char *line, *save = NULL;
	static char copy[sizeof(text)];

	memcpy(copy, text, sizeof(copy));
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		printf("#   %s\n", line);
}

static void reset(void)
{
	memset(fk, 0, sizeof(*fk));
}

/* ---- ipttool record, per-thread ------------------------------------------- */

static void test_record_prog(const char *dir)
{
	struct ipttool t = { .device = FAKE_PATH };
	char out[600], path[700];
	struct json_object *o, *tr;
	struct stat st;
	int rc;

	reset();
	snprintf(out, sizeof(out), "%s/p1", dir);
	{
		char *argv[] = { "record", "--size", "64K", "--threads", "4", "-q", "-o", out, "--",
				 "/bin/sh", "-c", "exit 3", NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	show();
	CHECK1(rc == 0, "record -- sh -c 'exit 3' exits 0: the capture is complete (got %d)", rc);
	CHECK1(fk->cfg.mode == IPT_MODE_THREAD && fk->cfg.max_threads == 4 &&
	      fk->cfg.buffer_size == 65536 && !fk->cfg.cpu_mask_ptr &&
	      !(fk->cfg.flags & IPT_CONFIG_ALL_CPUS) &&
	      (fk->cfg.trace_flags & (IPT_TRACE_USER | IPT_TRACE_KERNEL)) == IPT_TRACE_USER,
	      "the driver got IPT_MODE_THREAD, max_threads 4, 64K per thread, user only");
	CHECK1(fk->nr == 1 && fk->tr[0].flags == IPT_ATTACH_INHERIT && fk->tr[0].tid > 0 &&
	      (pid_t)fk->tr[0].tid != getpid(),
	      "the child attached itself (tid %u) with IPT_ATTACH_INHERIT", fk->tr[0].tid);
	CHECK1(strstr(text, "exited with status 3") != NULL, "the program's exit status is reported");
	snprintf(path, sizeof(path), "%s/thread-%u.pt", out, fk->tr[0].tid);
	CHECK1(!stat(path, &st) && st.st_size == 2 * 4096, "thread-%u.pt holds the 8 KiB written",
	      fk->tr[0].tid);
	o = capture_read_meta(out, path, sizeof(path));
	tr = jget(o, "traces.0");
	CHECK1(o && json_object_get_boolean(jget(o, "complete")) &&
	      !strcmp(json_object_get_string(jget(o, "mode")), "thread") &&
	      json_object_get_int(jget(o, "format_version")) == 1,
	      "meta.json: complete, mode thread, format_version 1");
	CHECK1(o && json_object_get_int(jget(o, "config.max_threads")) == 4 &&
	      json_object_get_boolean(jget(o, "config.inherit")) &&
	      json_object_array_length(jget(o, "traces")) == 1,
	      "meta.json: config.max_threads, config.inherit, one trace");
	CHECK1(tr && json_object_get_int(jget(tr, "tid")) == (int)fk->tr[0].tid &&
	      json_object_get_int(jget(tr, "trace")) == 0 && jget(tr, "parent") == NULL &&
	      json_object_object_get_ex(tr, "parent", NULL) && !jget(tr, "cpu") &&
	      json_object_get_boolean(jget(tr, "inherit")) &&
	      !json_object_get_boolean(jget(tr, "exited")) &&
	      json_object_get_int(jget(tr, "size")) == 8192 &&
	      json_object_get_int(jget(tr, "switches")) == 1 &&
	      json_object_object_get_ex(tr, "missed", NULL) &&
	      json_object_object_get_ex(tr, "busy", NULL),
	      "meta.json trace: tid, trace, parent null, no cpu, flags, size, counters");
	CHECK1(o && json_object_get_int(jget(o, "program.exit_status")) == 3 &&
	      json_object_get_int(jget(o, "program.pid")) == (int)fk->tr[0].tid &&
	      !strcmp(json_object_get_string(jget(o, "program.argv.0")), "/bin/sh") &&
	      json_object_array_length(jget(o, "program.attached_tids")) == 0,
	      "meta.json: program argv, pid, exit_status");
	json_object_put(o);

	{
		char *argv[] = { "info", out, NULL };
		struct ipttool ti = { 0 };

		rc = run_captured(cmd_info, &ti, argv);
	}
	show();
	snprintf(path, sizeof(path), "thread-%u.pt", fk->tr[0].tid);
	CHECK1(rc == 0 && strstr(text, "mode:        per-thread, 1 thread traced (of at most 4)") &&
	      strstr(text, path) && strstr(text, ", tid ") && strstr(text, "exit status 3") &&
	      !strstr(text, "MISMATCH"), "info shows the per-thread capture");

	/* --no-inherit, --stop-on-full, --kernel */
	reset();
	{
		char *argv[] = { "record", "--no-inherit", "--stop-on-full", "--user", "--kernel",
				 "-q", "-o", out, "--", "/bin/true", NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	CHECK1(rc == 0 && fk->nr == 1 && fk->tr[0].flags == 0 &&
	      (fk->cfg.buffer_flags & IPT_BUFFER_STOP_ON_FULL) &&
	      (fk->cfg.trace_flags & IPT_TRACE_KERNEL) && fk->cfg.max_threads == 64 &&
	      fk->cfg.buffer_size == RECORD_THREAD_SIZE,
	      "--no-inherit attaches without inherit; defaults 64 threads of 1M (rc %d)", rc);

	/* A command that cannot be run. */
	reset();
	{
		char *argv[] = { "record", "-q", "-o", out, "--", "/nonexistent/prog", NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	CHECK1(rc == 1 && strstr(text, "cannot run /nonexistent/prog: No such file"),
	      "an exec failure is reported, exit 1 (got %d)", rc);

	/* A module without per-thread mode. */
	reset();
	fk->old_module = 1;
	snprintf(out, sizeof(out), "%s/p-old", dir);
	{
		char *argv[] = { "record", "-o", out, "--", "/bin/true", NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	CHECK1(rc == 1 && strstr(text, "predates") && strstr(text, "record -a") &&
	      access(out, F_OK), "an old module is named as such, nothing written (got %d)", rc);

	/* Buffers over the locked-memory limit (EPERM from CONFIGURE). */
	reset();
	fk->eperm_configure = 1;
	snprintf(out, sizeof(out), "%s/p-memlock", dir);
	{
		char *argv[] = { "record", "-o", out, "--", "/bin/true", NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	CHECK1(rc == 1 && strstr(text, "RLIMIT_MEMLOCK") && strstr(text, "ipt.mlock_kb") &&
	      access(out, F_OK), "EPERM at configure names the locked-memory limit (got %d)", rc);
}

static void test_record_pid(const char *dir)
{
	struct ipttool t = { .device = FAKE_PATH };
	char out[600], path[700], tids[64];
	struct json_object *o;
	pid_t a, b;
	int rc;

	a = fork();
	if (!a) {
		pause();
		_exit(0);
	}
	b = fork();
	if (!b) {
		pause();
		_exit(0);
	}
	reset();
	snprintf(out, sizeof(out), "%s/p2", dir);
	snprintf(tids, sizeof(tids), "%d,%d", (int)a, (int)b);
	{
		char *argv[] = { "record", "-p", tids, "--duration", "0.3", "--size", "16K", "-q",
				 "-o", out, NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	show();
	CHECK1(rc == 0 && fk->nr == 2 && fk->tr[0].tid == (uint32_t)a && fk->tr[1].tid == (uint32_t)b &&
	      fk->tr[0].flags == IPT_ATTACH_INHERIT, "-p %s attaches both threads (rc %d)", tids, rc);
	snprintf(path, sizeof(path), "%s/thread-%d.pt", out, (int)b);
	CHECK1(!access(path, F_OK), "one file per thread: thread-%d.pt", (int)b);
	o = capture_read_meta(out, path, sizeof(path));
	CHECK1(o && json_object_array_length(jget(o, "program.attached_tids")) == 2 &&
	      json_object_get_int(jget(o, "program.attached_tids.1")) == b &&
	      jget(o, "program.argv") == NULL && json_object_array_length(jget(o, "traces")) == 2,
	      "meta.json: attached_tids, no argv, two traces");
	json_object_put(o);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);

	/* A thread that does not exist, and one of "another user". */
	reset();
	snprintf(out, sizeof(out), "%s/p3", dir);
	snprintf(tids, sizeof(tids), "%d", (int)a);	/* reaped: gone */
	{
		char *argv[] = { "record", "-p", tids, "-o", out, NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	CHECK1(rc == 1 && strstr(text, "no such thread") && access(out, F_OK),
	      "-p of a thread that is gone: 'no such thread', nothing written (got %d)", rc);
	reset();
	fk->eperm_tid = 1;
	{
		char *argv[] = { "record", "-p", "1", "-o", out, NULL };

		rc = run_captured(cmd_record, &t, argv);
	}
	CHECK1(rc == 1 && strstr(text, "CAP_PERFMON") && strstr(text, "another process") &&
	      access(out, F_OK), "-p of another user's thread: EPERM names CAP_PERFMON (got %d)", rc);
}

/* ---- the drpttracer-shaped API ---------------------------------------------- */

static void spin_ms(unsigned int ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

/* Whether the perf records in @out's sideband parse, one after the other,
 * with an executable anonymous mapping of @out->tid among them. */
static bool sideband_ok(const struct iptcap_output *out, bool *mmap_seen)
{
	size_t off;

	*mmap_seen = false;
	for (off = 0; off + 8 <= out->sideband_size;) {
		struct iptcap_sb_rec r;
		uint16_t sz;

		memcpy(&sz, (const char *)out->sideband + off + 6, 2);
		if (sz < 8 || off + sz > out->sideband_size ||
		    iptcap_sb_parse((const char *)out->sideband + off, sz, &r))
			return false;
		if (r.type == IPTCAP_SB_MMAP && r.tid == out->tid && !strcmp(r.name, "//anon"))
			*mmap_seen = true;
		off += sz;
	}
	return off == out->sideband_size;
}

/* The example of Documentation/libiptcap.rst ("A tracer per thread"). */
static int doc_example(const char *device, struct iptcap_output *out)
{
	struct iptcap_thread_opts opts = { .device = device, .buffer_size = 64 << 10 };
	struct iptcap_thread *th;
	void *code;

	if (iptcap_thread_create(&opts, &th))
		return -1;
	iptcap_thread_start(th);
	/* ... the code to trace; here it maps code, for the sideband, and spins ... */
	code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	spin_ms(50);
	iptcap_thread_stop(th, out);	/* out->pt, out->sideband, out->metadata */
	iptcap_thread_destroy(th);
	if (code != MAP_FAILED)
		munmap(code, 4096);
	return 0;
}

/*
 * The documented example on the real /dev/ipt (in the VM, from
 * capture-tests): the thread's PT bytes are written to @path for ptcheck.
 */
static void test_thread_api_real(const char *path)
{
	struct iptcap_output out = { 0 };
	struct ipt_caps caps;
	struct iptcap *ipt;
	bool seen = false, sb;
	int fd, rc;

	if (iptcap_open(NULL, &ipt) || iptcap_get_caps(ipt, &caps)) {
		CHECK1(0, "open %s", IPT_DEVICE_PATH);
		return;
	}
	iptcap_close(ipt);
	rc = doc_example(NULL, &out);
	CHECK1(rc == 0 && out.pt_size > 0, "%s: the example traced its thread (%zu bytes)",
	       IPT_DEVICE_PATH, out.pt_size);
	CHECK1(out.metadata.cpu_family == caps.family && out.metadata.cpu_model == caps.model &&
	       out.metadata.cpu_stepping == caps.stepping && out.tid == (uint32_t)syscall(SYS_gettid),
	       "%s: metadata of this CPU, this thread", IPT_DEVICE_PATH);
	sb = sideband_ok(&out, &seen);
	printf("# %s: %zu sideband bytes%s%s; time_conv %s\n", IPT_DEVICE_PATH, out.sideband_size,
	       out.sideband_skipped[0] ? ": " : "", out.sideband_skipped,
	       out.metadata.have_time_conv ? "read" : "unavailable");
	CHECK1(out.sideband_size ? sb && seen : out.sideband_skipped[0] != '\0',
	       "%s: the thread's sideband has its mmap (or says why there is none)", IPT_DEVICE_PATH);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK1(fd >= 0 && write(fd, out.pt, out.pt_size) == (ssize_t)out.pt_size,
	       "the PT bytes are written to %s", path);
	if (fd >= 0)
		close(fd);
	iptcap_output_free(&out);
}

static void *second_thread(void *arg)
{
	struct iptcap_thread_opts opts = { .device = FAKE_PATH };
	struct iptcap_output out = { 0 };
	struct iptcap_thread *th;
	long ok = 0;

	(void)arg;
	if (!iptcap_thread_create(&opts, &th)) {
		ok = !iptcap_thread_start(th) && !iptcap_thread_stop(th, &out) &&
		     out.tid == (uint32_t)syscall(SYS_gettid) && out.pt_size > 0;
		iptcap_thread_destroy(th);
	}
	iptcap_output_free(&out);
	return (void *)ok;
}

static void test_thread_api(void)
{
	struct iptcap_output out = { 0 };
	struct iptcap_thread_opts opts = { .device = FAKE_PATH, .max_threads = 3 };
	struct iptcap_thread *th;
	const unsigned char *p;
	size_t i;
	bool pattern = true, parsed, seen = false;
	int cycles_ok = 1;
	void *ret = NULL;
	pthread_t pt;

	reset();
	CHECK1(doc_example(FAKE_PATH, &out) == 0, "the documented example runs");
	CHECK1(out.pt_size == 2 * 4096, "output: the PT bytes of the trace (%zu)", out.pt_size);
	p = out.pt;
	for (i = 0; i < out.pt_size; i++)
		pattern = pattern && p && p[i] == 0x50;
	CHECK1(pattern, "output: the bytes are the unit's");
	CHECK1(out.metadata.cpu_family == 6 && out.metadata.cpu_model == 0x8c &&
	      out.metadata.cpu_stepping == 1 && out.metadata.cpuid_15.ebx == 176 &&
	      out.metadata.nom_freq == 24, "output: family/model/stepping, CPUID 15H, nom_freq");
	CHECK1(out.tid == (uint32_t)syscall(SYS_gettid) && out.loss == IPTCAP_OK,
	      "output: the calling thread's trace, nothing lost");
	CHECK1(fk->configures == 1 && fk->cfg.mode == IPT_MODE_THREAD &&
	      fk->cfg.max_threads == IPTCAP_THREAD_DEFAULT_MAX && fk->cfg.buffer_size == 65536 &&
	      fk->tr[0].flags == 0 && (fk->tr[0].status & IPT_TS_DETACHED) && fk->state == 0,
	      "one per-thread session; start attached, stop detached, destroy released it");
	printf("# time_conv %s, sideband %zu bytes%s%s\n",
	       out.metadata.have_time_conv ? "read" : "unavailable", out.sideband_size,
	       out.sideband_skipped[0] ? ": " : "", out.sideband_skipped);
	parsed = sideband_ok(&out, &seen);
	CHECK1(out.sideband_size ? parsed && seen : out.sideband_skipped[0] != '\0',
	      "output: sideband records of the thread (its mmap), or why there are none");
	iptcap_output_free(&out);
	CHECK1(!out.pt && !out.pt_size && !out.sideband, "iptcap_output_free() empties it");

	/* Start/stop cycles beyond max_threads: the session is made anew. */
	reset();
	if (iptcap_thread_create(&opts, &th)) {
		CHECK1(0, "create with max_threads 3");
		return;
	}
	CHECK1(iptcap_thread_stop(th, &out) == IPTCAP_ERR_STATE, "stop before start: state error");
	for (i = 0; i < 4; i++)
		cycles_ok = cycles_ok && !iptcap_thread_start(th) &&
			    !iptcap_thread_stop(th, &out) && out.pt_size == (i % 3 + 2) * 4096;
	CHECK1(cycles_ok && fk->configures == 2, "4 start/stop cycles on 3 traces: reconfigured once "
	      "(%u configures)", fk->configures);
	CHECK1(!iptcap_thread_start(th), "start again");
	CHECK1(!pthread_create(&pt, NULL, second_thread, NULL) && !pthread_join(pt, &ret) && ret,
	      "another thread's handle shares the session while this one traces");
	CHECK1(fk->configures == 2 && fk->nr == 3, "the second handle used the shared session");
	CHECK1(iptcap_thread_start(th) == IPTCAP_ERR_STATE, "start while started: state error");
	iptcap_thread_destroy(th);
	CHECK1(fk->state == IPT_STATE_IDLE && (fk->tr[1].status & IPT_TS_DETACHED),
	      "destroying the last handle detaches its thread and releases the session");
	iptcap_output_free(&out);

	/* Errors through the enum. */
	reset();
	fk->old_module = 1;
	CHECK1(iptcap_thread_create(&opts, &th) == IPTCAP_ERR_NO_THREAD_MODE && !th,
	      "an old module: IPTCAP_ERR_NO_THREAD_MODE");
	CHECK1(iptcap_thread_create(&(struct iptcap_thread_opts){ .buffer_size = 1000 }, &th) ==
	      IPTCAP_ERR_INVALID, "a size that is not a multiple of 4096 is invalid");
	CHECK1(!strcmp(iptcap_strerror(IPTCAP_ERR_NO_SUCH_THREAD), "no such thread (or it is exiting)") &&
	      iptcap_err_from_errno(ESRCH) == IPTCAP_ERR_NO_SUCH_THREAD &&
	      iptcap_err_from_errno(EEXIST) == IPTCAP_ERR_ALREADY_TRACED &&
	      strcmp(iptcap_strerror(IPTCAP_ERR_NO_FREE_TRACE), "unknown error") &&
	      strcmp(iptcap_strerror(IPTCAP_ERR_NO_SUCH_TRACE), "unknown error"),
	      "the new errors have strings and errno mappings");
}

/* ---- the library's per-thread session calls ---------------------------------- */

static void test_lib_session(void)
{
	struct iptcap_config cfg;
	struct iptcap *ipt;
	struct ipt_trace_state ts;
	unsigned int tr = 99, n = 99;
	char msg[256];
	void *buf = malloc(1 << 16);
	size_t copied = 0;

	reset();
	if (iptcap_open(FAKE_PATH, &ipt)) {
		CHECK1(0, "open the model");
		free(buf);
		return;
	}
	CHECK1(iptcap_has_thread_mode(ipt), "a module with per-thread mode is recognised");
	iptcap_config_init(&cfg);
	cfg.per_thread = true;
	cfg.max_threads = 3;
	cfg.buffer_size = 1 << 16;
	cfg.kernel = false;
	CHECK1(!iptcap_configure(ipt, &cfg, msg, sizeof(msg)) && iptcap_is_per_thread(ipt),
	      "configure per-thread");
	CHECK1(!iptcap_nr_traces(ipt, &n) && n == 0, "no trace handed out yet");
	CHECK1(iptcap_trace_state(ipt, 0, &ts) == IPTCAP_ERR_NO_SUCH_TRACE,
	      "GET_TRACE of a trace not handed out: IPTCAP_ERR_NO_SUCH_TRACE");
	CHECK1(!iptcap_attach(ipt, 0, 0, &tr) && tr == 0, "attach self: trace 0");
	CHECK1(iptcap_attach(ipt, 0, 0, &tr) == IPTCAP_ERR_ALREADY_TRACED, "twice: already traced");
	CHECK1(iptcap_attach(ipt, 0x7ffffff0, 0, &tr) == IPTCAP_ERR_NO_SUCH_THREAD &&
	      iptcap_last_errno(ipt) == ESRCH, "a thread that does not exist: no such thread");
	fk->eperm_tid = getppid();
	CHECK1(iptcap_attach(ipt, (uint32_t)getppid(), 0, &tr) == IPTCAP_ERR_PERMISSION,
	      "another user's thread: permission");
	CHECK1(!iptcap_start(ipt) && !iptcap_detach(ipt, 0) && !iptcap_attach(ipt, 0, 0, &tr) &&
	      tr == 1 && iptcap_attach(ipt, (uint32_t)getpid(), 0, &tr) == IPTCAP_ERR_ALREADY_TRACED,
	      "detach, then attach again to a new trace");
	CHECK1(!iptcap_nr_traces(ipt, &n) && n == 2, "two traces handed out (%u)", n);
	fk->eperm_tid = 0;
	CHECK1(!iptcap_attach(ipt, (uint32_t)getppid(), 0, &tr) && tr == 2 &&
	      iptcap_attach(ipt, (uint32_t)getppid(), IPTCAP_ATTACH_INHERIT, &tr) ==
	      IPTCAP_ERR_ALREADY_TRACED, "a third");
	CHECK1(iptcap_detach(ipt, 0) == IPTCAP_ERR_NO_SUCH_THREAD, "detach twice: no such thread");
	CHECK1(iptcap_detach(ipt, 7) == IPTCAP_ERR_NO_SUCH_TRACE, "detach of no trace");
	CHECK1(iptcap_attach(ipt, 1, 0, &tr) == IPTCAP_ERR_NO_FREE_TRACE,
	      "every trace used: IPTCAP_ERR_NO_FREE_TRACE");
	CHECK1(!iptcap_stop(ipt) && !iptcap_copy_trace(ipt, 1, buf, 1 << 16, &copied) &&
	      copied == 3 * 4096 && ((unsigned char *)buf)[0] == 0x51,
	      "copy trace 1 out by index (%zu bytes)", copied);
	CHECK1(!iptcap_release(ipt) && !iptcap_is_per_thread(ipt), "release");
	fk->old_module = 1;
	CHECK1(!iptcap_has_thread_mode(ipt), "an old module is recognised");
	CHECK1(iptcap_configure(ipt, &cfg, msg, sizeof(msg)) == IPTCAP_ERR_NO_THREAD_MODE &&
	      strstr(msg, "predates"), "configure on an old module: %s", msg);
	iptcap_close(ipt);
	free(buf);
}

int main(void)
{
	char dir[] = "/tmp/ipt-test-thread.XXXXXX";
	char cmd[600];

	fk = mmap(NULL, sizeof(*fk), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fk == MAP_FAILED || !mkdtemp(dir)) {
		CHECK1(0, "setup");
		return tap_done();
	}
	snprintf(errfile, sizeof(errfile), "%s/stderr", dir);
	/* In the VM: IPT_TEST_REAL_PT=FILE runs the example on /dev/ipt too. */
	if (getenv("IPT_TEST_REAL_PT"))
		test_thread_api_real(getenv("IPT_TEST_REAL_PT"));
	test_lib_session();
	test_thread_api();
	test_record_prog(dir);
	test_record_pid(dir);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		CHECK1(0, "cleanup");
	return tap_done();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * 'ipttool record' end to end on the host, without ipt.ko: this program
 * defines open(), ioctl() and mmap(), so that libiptcap's calls on the
 * path "/dev/ipt-test" reach a small model of the driver (a per-CPU
 * session on 2 CPUs, ring buffers the "unit" fills on start) while every
 * other call goes to the C library.  cmd_record() then runs for real:
 * perf sideband around a command, the /proc snapshot, the vDSO, the
 * traces, meta.json; 'ipttool info' reads the result.  The sideband checks
 * need CPU-wide perf events (root); without them they check that the
 * capture says why.
 */
#include <errno.h>
#include <fcntl.h>
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

#define FAKE_PATH "/dev/ipt-test"
#define FAKE_MMAP
#include "fake_ipt.h"

#define FAKE_CPUS 2

static int fake_state;	/* enum ipt_state */
static unsigned char *fake_buf[FAKE_CPUS];
static int fake_mem[FAKE_CPUS];	/* memfds holding the buffers */
static size_t fake_size;
static struct ipt_config fake_cfg;

static int fake_open(void)
{
	fake_fd = memfd_create("ipt-test", MFD_CLOEXEC);
	return fake_fd;
}

static int fake_ioctl(unsigned long req, void *arg)
{
	unsigned int i;

	if (req == IPT_IOC_GET_CAPS) {
		struct ipt_caps *c = arg;

		fake_caps(c, 0x7e);
		c->stepping = 5;
		c->features = IPT_FEAT_TOPA | IPT_FEAT_TOPA_MULTI | IPT_FEAT_IP_FILTER |
			      IPT_FEAT_CR3_FILTER | IPT_FEAT_MTC | IPT_FEAT_PSB_CYC;
		c->num_addr_ranges = 2;
		c->mtc_freq_mask = 0x249;
		c->cyc_thresh_mask = 0x1fff;
		c->psb_freq_mask = 0x3f;
		c->nr_cpus = FAKE_CPUS;
		c->max_topa_order = 22;
		c->max_trace_size = 1 << 24;
		return 0;
	}
	if (req == IPT_IOC_CONFIGURE) {
		if (fake_state) {
			errno = EBUSY;
			return -1;
		}
		fake_cfg = *(struct ipt_config *)arg;
		fake_size = fake_cfg.buffer_size;
		for (i = 0; i < FAKE_CPUS; i++) {
			fake_mem[i] = memfd_create("ipt-test-buffer", MFD_CLOEXEC);
			if (fake_mem[i] < 0 || ftruncate(fake_mem[i], (off_t)fake_size)) {
				errno = ENOMEM;
				return -1;
			}
			fake_buf[i] = mmap(NULL, fake_size, PROT_READ | PROT_WRITE, MAP_SHARED,
					   fake_mem[i], 0);
			if (fake_buf[i] == MAP_FAILED) {
				errno = ENOMEM;
				return -1;
			}
		}
		fake_state = IPT_STATE_CONFIGURED;
		return 0;
	}
	if (req == IPT_IOC_START) {
		/* The "unit" writes half of cpu0's buffer and a third of cpu1's. */
		for (i = 0; i < FAKE_CPUS; i++)
			memset(fake_buf[i], 0x40 + (int)i, fake_size / (i + 2));
		fake_state = IPT_STATE_TRACING;
		return 0;
	}
	if (req == IPT_IOC_STOP) {
		fake_state = IPT_STATE_STOPPED;
		return 0;
	}
	if (req == IPT_IOC_RELEASE) {
		for (i = 0; i < FAKE_CPUS; i++) {
			munmap(fake_buf[i], fake_size);
			close(fake_mem[i]);
		}
		fake_state = IPT_STATE_IDLE;
		return 0;
	}
	if (req == IPT_IOC_GET_TRACE) {
		struct ipt_trace_state *t = arg;
		unsigned int cpu = t->cpu;

		if (cpu >= FAKE_CPUS || !fake_state) {
			errno = fake_state ? ENOENT : EINVAL;
			return -1;
		}
		memset(t, 0, sizeof(*t));
		t->size = sizeof(*t);
		t->cpu = cpu;
		t->state = (uint32_t)fake_state;
		t->buffer_size = fake_size;
		t->mmap_offset = cpu * fake_size;
		t->status = fake_state == IPT_STATE_TRACING ? IPT_TS_RUNNING : 0;
		t->head = t->bytes_valid = t->bytes_captured = fake_size / (cpu + 2);
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

/* CPU i's buffer, at i * fake_size of the device, is all of fake_mem[i]. */
static int fake_map(size_t len, off_t *off)
{
	size_t cpu;

	if (!fake_size || *off % fake_size || (size_t)*off / fake_size >= FAKE_CPUS ||
	    len != fake_size)
		return -1;
	cpu = (size_t)*off / fake_size;
	*off = 0;
	return fake_mem[cpu];
}

static int run(struct ipttool *t, char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return cmd_record(t, argc, argv);
}

/* The contents of @path (at most @len - 1 bytes), NUL-terminated. */
static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	char dir[] = "/tmp/ipt-test-record.XXXXXX";
	char out[600], path[700], errfile[700], cmd[800];
	static char text[1 << 20];
	struct ipttool t = { .device = FAKE_PATH };
	struct json_object *o;
	struct stat st;
	int rc, saved, fd;
	bool perf;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return tap_done();
	}
	snprintf(out, sizeof(out), "%s/cap", dir);
	snprintf(errfile, sizeof(errfile), "%s/stderr", dir);

	/* Not a terminal: stderr goes to a file, so no progress line. */
	fflush(stderr);
	saved = dup(2);
	fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 2);
	close(fd);
	{
		char *argv[] = { "record", "-a", "--size", "64K", "--filter", "0x401000-0x401fff",
				 "--stop-range", "0x500000-0x500fff", "--cr3", "0x1a2b3000",
				 "-o", out, "--", "/bin/true", NULL };

		rc = run(&t, argv);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	slurp(errfile, text, sizeof(text));
	printf("# stderr of record:\n");
	{
		char *line, *save = NULL;
		static char copy[sizeof(text)];

		memcpy(copy, text, sizeof(copy));
		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			printf("#   %s\n", line);
	}
	CHECK(rc == 0, "record -a -- /bin/true exits 0 (got %d)", rc);
	CHECK(!strchr(text, '\r'), "no progress line when stderr is not a terminal");
	CHECK(fake_cfg.ranges[0].kind == IPT_RANGE_FILTER && fake_cfg.ranges[0].start == 0x401000 &&
	      fake_cfg.ranges[0].end == 0x401fff && fake_cfg.ranges[1].kind == IPT_RANGE_STOP &&
	      fake_cfg.ranges[1].start == 0x500000 && fake_cfg.ranges[2].kind == IPT_RANGE_OFF &&
	      (fake_cfg.trace_flags & IPT_TRACE_CR3_FILTER) && fake_cfg.cr3_match == 0x1a2b3000,
	      "--filter, --stop-range and --cr3 reach the driver's ipt_config");
	snprintf(path, sizeof(path), "%s/cpu0.pt", out);
	CHECK(!stat(path, &st) && st.st_size == 32768, "cpu0.pt has the 32 KiB the unit wrote");

	o = capture_read_meta(out, path, sizeof(path));
	CHECK(o && json_object_get_boolean(jget(o, "complete")), "meta.json: complete");
	perf = o && json_object_get_boolean(jget(o, "sideband.perf"));
	if (!perf)
		printf("# no perf sideband here: %s\n",
		       o ? json_object_get_string(jget(o, "sideband.perf_skipped")) : "?");
	CHECK(perf ? strstr(text, "no perf sideband") == NULL :
	      strstr(text, "no perf sideband") != NULL && jget(o, "sideband.perf_skipped") != NULL,
	      "the 'no perf sideband' line (and perf_skipped) exactly when it is refused");
	CHECK(o && json_object_get_int(jget(o, "sideband.snapshot.processes")) > 0 &&
	      json_object_array_length(jget(o, "sideband.vdso")) >= 1,
	      "meta.json: snapshot and vDSO");
	CHECK(o && json_object_array_length(jget(o, "config.ranges")) == 2 &&
	      json_object_get_uint64(jget(o, "config.cr3_match")) == 0x1a2b3000,
	      "meta.json: ranges and CR3");
	if (perf) {
		bool exec_true = false;
		FILE *f;
		char line[8192];

		CHECK(json_object_get_int(jget(o, "sideband.records.comm")) > 0 &&
		      json_object_get_int(jget(o, "sideband.records.fork")) > 0 &&
		      json_object_get_int(jget(o, "sideband.records.exit")) > 0 &&
		      json_object_get_int(jget(o, "sideband.records.mmap")) > 0,
		      "meta.json counts comm, fork, exit and mmap records");
		snprintf(path, sizeof(path), "%s/sideband.jsonl", out);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (strstr(line, "\"comm\":\"true\",\"exec\":true"))
				exec_true = true;
		if (f)
			fclose(f);
		CHECK(exec_true, "sideband.jsonl has the exec of the command");
		CHECK(strstr(text, "ipttool: sideband: ") && strstr(text, " perf records, "),
		      "the summary gives the sideband");
	}
	json_object_put(o);

	/* 'ipttool info' reads it. */
	snprintf(path, sizeof(path), "%s/info", dir);
	fflush(stdout);
	saved = dup(1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 1);
	close(fd);
	{
		char *argv[] = { "info", out, NULL };
		struct ipttool ti = { 0 };

		rc = cmd_info(&ti, 2, argv);
	}
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	slurp(path, text, sizeof(text));
	CHECK(rc == 0 && strstr(text, "status:      complete") && strstr(text, "sideband:") &&
	      strstr(text, "snapshot:") && !strstr(text, "MISMATCH") && !strstr(text, "MISSING"),
	      "info reads the capture with its sideband");

	/* On a terminal: the progress line, twice a second; none with -q. */
	{
		static const char *const q[2] = { NULL, "-q" };
		int k;

		for (k = 0; k < 2; k++) {
			char buf[16384], *sl;
			size_t got = 0;
			ssize_t n;
			int m = posix_openpt(O_RDWR | O_NOCTTY), wst = 0;
			pid_t pid;

			if (m < 0 || grantpt(m) || unlockpt(m) || !(sl = ptsname(m))) {
				CHECK(0, "a pseudo-terminal: %s", strerror(errno));
				break;
			}
			snprintf(out, sizeof(out), "%s/cap-tty%d", dir, k);
			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				char *argv[] = { "record", "-a", "--size", "64K", "--stop-on-full",
						 "--duration", "1.8", "-o", out, (char *)q[k], NULL };
				int s2 = open(sl, O_RDWR | O_NOCTTY);

				close(m);
				dup2(s2, 2);
				_exit(run(&t, argv));
			}
			for (;;) {
				n = read(m, buf + got, sizeof(buf) - 1 - got);
				if (n <= 0)
					break;
				got += (size_t)n;
				if (got >= sizeof(buf) - 1)
					break;
			}
			buf[got] = '\0';
			waitpid(pid, &wst, 0);
			close(m);
			if (!k)
			{
				/* cpu1's 21845 bytes end in its 6th page: 24K. */
				char *p = buf;
				int lines = 0;

				while ((p = strstr(p, "\ripttool: ")) && ++lines)
					p++;
				CHECK(WIFEXITED(wst) && !WEXITSTATUS(wst) && lines >= 3 &&
				      strstr(buf, "s  cpu0 32K  cpu1 24K") && strstr(buf, "\033[K"),
				      "a terminal gets the progress line, bytes per CPU, ~2/s "
				      "(%d updates)", lines);
			}
			else
				CHECK(WIFEXITED(wst) && !WEXITSTATUS(wst) && strstr(buf, "capture in") &&
				      !strstr(buf, "ipttool: 0.5s") && !strstr(buf, "\033[K"),
				      "-q: no progress line");
		}
	}

	/* A capability the unit lacks is refused before anything is written. */
	snprintf(out, sizeof(out), "%s/cap2", dir);
	saved = dup(2);
	fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	dup2(fd, 2);
	close(fd);
	{
		char *argv[] = { "record", "-a", "--filter", "1-2", "--filter", "3-4",
				 "--stop-range", "5-6", "-o", out, NULL };

		rc = run(&t, argv);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	slurp(errfile, text, sizeof(text));
	CHECK(rc == 1 && strstr(text, "num_addr_ranges") && access(out, F_OK),
	      "3 ranges on a unit with 2 are refused up front: %s", strtok(text, "\n"));

	/* The flight recorder: a dump carries a /proc snapshot, no perf events. */
	{
		char run_dir[600], dump[600];
		char *sargv[] = { "start", "-a", "--size", "64K", NULL };
		char *dargv[] = { "dump", "-o", dump, NULL };
		char *pargv[] = { "stop", NULL };
		struct ipttool tq = { .device = FAKE_PATH, .json = true };

		snprintf(run_dir, sizeof(run_dir), "%s/run", dir);
		snprintf(dump, sizeof(dump), "%s/dump", dir);
		setenv("IPTTOOL_RUN_DIR", run_dir, 1);
		fflush(stdout);
		saved = dup(1);
		fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		close(fd);
		rc = cmd_start(&tq, 4, sargv);
		if (!rc)
			rc = cmd_dump(&tq, 3, dargv);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
		o = rc ? NULL : capture_read_meta(dump, path, sizeof(path));
		CHECK(o && json_object_get_boolean(jget(o, "complete")) &&
		      !json_object_get_boolean(jget(o, "sideband.perf")) &&
		      strstr(json_object_get_string(jget(o, "sideband.perf_skipped")), "flight") &&
		      json_object_get_int(jget(o, "sideband.snapshot.processes")) > 0 &&
		      json_object_array_length(jget(o, "sideband.vdso")) >= 1,
		      "a flight-recorder dump has a /proc snapshot as sideband (rc %d)", rc);
		json_object_put(o);
		snprintf(path, sizeof(path), "%s/sideband.jsonl", dump);
		slurp(path, text, sizeof(text));
		CHECK(strstr(text, "\"type\":\"comm\",\"time\":null") && !strstr(text, "\"type\":\"switch\""),
		      "the dump's sideband.jsonl: snapshot records only");
		fflush(stdout);
		fd = open("/dev/null", O_WRONLY);
		saved = dup(1);
		dup2(fd, 1);
		close(fd);
		rc = cmd_stop(&tq, 1, pargv);
		fflush(stdout);
		dup2(saved, 1);
		close(saved);
		CHECK(rc == 0, "the flight recorder stops");
		unsetenv("IPTTOOL_RUN_DIR");
	}

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		CHECK(0, "cleanup");
	return tap_done();
}

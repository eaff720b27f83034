// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of the sideband: perf record parsing on synthetic records,
 * TSC <-> perf time conversion, ELF build-ids, the /proc snapshot, and a
 * real recording (perf dummy events on every CPU) around fork + exec of
 * /bin/true, read back from sideband.jsonl.  The real recording needs
 * perf_event_open for CPU-wide events (root, or perf_event_paranoid <= 0);
 * without it those checks are skipped with a reason, which is printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../ipttool/ipttool.h"
#include "tap.h"

/* Build a perf record: header, @body, then the sample_id trailer. */
static size_t mkrec(unsigned char *out, uint32_t type, uint16_t misc, const void *body,
		    size_t blen, uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu)
{
	struct perf_event_header h;
	size_t pad = (8 - blen % 8) % 8, len = sizeof(h) + blen + pad + 24;
	uint32_t id[6];

	h.type = type;
	h.misc = misc;
	h.size = (uint16_t)len;
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), body, blen);
	memset(out + sizeof(h) + blen, 0, pad);
	id[0] = pid;
	id[1] = tid;
	memcpy(&id[2], &time, 8);
	id[4] = cpu;
	id[5] = 0;
	memcpy(out + len - 24, id, 24);
	return len;
}

static void test_parse(void)
{
	unsigned char rec[512], body[256];
	struct iptcap_sb_rec r;
	uint32_t u32;
	uint64_t u64v;
	size_t n;

	/* MMAP2 with a build-id */
	memset(body, 0, sizeof(body));
	u32 = 42; memcpy(body, &u32, 4);
	u32 = 43; memcpy(body + 4, &u32, 4);
	u64v = 0x400000; memcpy(body + 8, &u64v, 8);
	u64v = 0x2000; memcpy(body + 16, &u64v, 8);
	u64v = 0x1000; memcpy(body + 24, &u64v, 8);
	body[32] = 20;
	memset(body + 36, 0xab, 20);
	u32 = 5; memcpy(body + 56, &u32, 4);
	u32 = 2; memcpy(body + 60, &u32, 4);
	strcpy((char *)body + 64, "/usr/bin/x");
	n = mkrec(rec, PERF_RECORD_MMAP2, PERF_RECORD_MISC_MMAP_BUILD_ID, body, 64 + 11,
		  42, 43, 1000, 1);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.type == IPTCAP_SB_MMAP && r.pid == 42 &&
	      r.tid == 43 && r.addr == 0x400000 && r.len == 0x2000 && r.pgoff == 0x1000 &&
	      r.build_id_size == 20 && r.build_id[19] == 0xab && !r.has_dev && r.prot == 5 &&
	      r.flags == 2 && !strcmp(r.name, "/usr/bin/x") && r.time == 1000 && r.cpu == 1,
	      "mmap2 with build-id parses");
	/* MMAP2 with device and inode */
	u32 = 8; memcpy(body + 32, &u32, 4);
	u32 = 1; memcpy(body + 36, &u32, 4);
	u64v = 777; memcpy(body + 40, &u64v, 8);
	n = mkrec(rec, PERF_RECORD_MMAP2, 0, body, 64 + 11, 42, 43, 1000, 1);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.has_dev && r.maj == 8 && r.min == 1 &&
	      r.ino == 777 && !r.build_id_size, "mmap2 with device/inode parses");
	CHECK(iptcap_sb_parse(rec, n - 8, &r) == -1, "a size that differs from the header is refused");
	/* an unterminated file name */
	memset(body + 64, 'x', 16);
	n = mkrec(rec, PERF_RECORD_MMAP2, 0, body, 64 + 16, 42, 43, 1000, 1);
	CHECK(iptcap_sb_parse(rec, n, &r) == -1, "unterminated file name is refused");

	memset(body, 0, sizeof(body));
	u32 = 7; memcpy(body, &u32, 4);
	u32 = 8; memcpy(body + 4, &u32, 4);
	strcpy((char *)body + 8, "true");
	n = mkrec(rec, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, body, 13, 7, 8, 5, 0);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.type == IPTCAP_SB_COMM && r.exec &&
	      r.pid == 7 && r.tid == 8 && !strcmp(r.name, "true"), "comm exec parses");

	u32 = 100; memcpy(body, &u32, 4);	/* pid */
	u32 = 1; memcpy(body + 4, &u32, 4);	/* ppid */
	u32 = 101; memcpy(body + 8, &u32, 4);	/* tid */
	u32 = 2; memcpy(body + 12, &u32, 4);	/* ptid */
	u64v = 999; memcpy(body + 16, &u64v, 8);
	n = mkrec(rec, PERF_RECORD_FORK, 0, body, 24, 1, 2, 998, 0);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.type == IPTCAP_SB_FORK && r.pid == 100 &&
	      r.ppid == 1 && r.tid == 101 && r.ptid == 2 && r.time == 999, "fork parses");
	n = mkrec(rec, PERF_RECORD_EXIT, 0, body, 24, 1, 2, 998, 0);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.type == IPTCAP_SB_EXIT, "exit parses");

	u32 = 55; memcpy(body, &u32, 4);
	u32 = 56; memcpy(body + 4, &u32, 4);
	n = mkrec(rec, PERF_RECORD_SWITCH_CPU_WIDE,
		  PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, body, 8,
		  9, 9, 3, 1);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.type == IPTCAP_SB_SWITCH && r.switch_out &&
	      r.preempt && r.next_prev_pid == 55 && r.next_prev_tid == 56 && r.pid == 9,
	      "switch out (preempted) parses");
	n = mkrec(rec, PERF_RECORD_SWITCH_CPU_WIDE, 0, body, 8, 9, 9, 3, 1);
	CHECK(!iptcap_sb_parse(rec, n, &r) && !r.switch_out && !r.preempt, "switch in parses");

	u64v = 1; memcpy(body, &u64v, 8);
	u64v = 12; memcpy(body + 8, &u64v, 8);
	n = mkrec(rec, PERF_RECORD_LOST, 0, body, 16, 0, 0, 3, 1);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.type == IPTCAP_SB_LOST && r.lost == 12,
	      "lost parses");
	n = mkrec(rec, PERF_RECORD_THROTTLE, 0, body, 16, 0, 0, 3, 1);
	CHECK(!iptcap_sb_parse(rec, n, &r) && r.type == IPTCAP_SB_OTHER &&
	      r.raw_type == PERF_RECORD_THROTTLE, "other types are passed as OTHER");
	CHECK(iptcap_sb_parse(rec, 16, &r) == -1, "a record shorter than its trailer is refused");
}

static void test_time_conv(void)
{
	struct iptcap_time_conv tc = { .time_shift = 31, .time_mult = 1789569706u,
				       .time_zero = (uint64_t)-123456789ll };
	uint64_t tsc, t, back;
	int ok = 1, i;

	/* 2.4 GHz-ish: mult / 2^31 = 0.833 ns per tick. */
	for (i = 0; i < 1000; i++) {
		tsc = 1000000000ull + (uint64_t)i * 7919 * 104729;
		t = iptcap_tsc_to_time(&tc, tsc);
		back = iptcap_time_to_tsc(&tc, t);
		if (back > tsc || tsc - back > 2)
			ok = 0;
	}
	CHECK(ok, "TSC -> time -> TSC round trip within 2 ticks");
	tc.time_shift = 0;
	tc.time_mult = 1;
	tc.time_zero = 10;
	CHECK(iptcap_tsc_to_time(&tc, 5) == 15 && iptcap_time_to_tsc(&tc, 15) == 5,
	      "identity conversion with an offset");
	tc.time_shift = 1;
	tc.time_mult = 1;
	tc.time_zero = 0;
	CHECK(iptcap_tsc_to_time(&tc, 1000) == 500 && iptcap_time_to_tsc(&tc, 500) == 1000,
	      "half-rate conversion");
}

static void test_build_id(void)
{
	uint8_t id[20], len = 0;
	char path[64];
	int rc;

	rc = iptcap_elf_build_id("/proc/self/exe", id, &len);
	CHECK(rc == 0 && len >= 8, "this test's own build-id (%u bytes)", len);
	rc = iptcap_elf_build_id("/etc/hostname", id, &len);
	CHECK(rc == -1 && len == 0, "no build-id in a text file");
	snprintf(path, sizeof(path), "/nonexistent/%d", getpid());
	CHECK(iptcap_elf_build_id(path, id, &len) == -1, "no build-id of a missing file");
}

struct snap_check {
	bool self_comm, self_exe_map, any_vdso;
	uint32_t self;
	char comm[64];
};

static int snap_fn(const struct iptcap_sb_rec *r, void *arg)
{
	struct snap_check *s = arg;

	if (!r->snapshot)
		return 0;
	if (r->pid == s->self && r->type == IPTCAP_SB_COMM && !strcmp(r->name, s->comm))
		s->self_comm = true;
	if (r->pid == s->self && r->type == IPTCAP_SB_MMAP && strstr(r->name, "test_sideband") &&
	    (r->prot & 4) && r->build_id_size)
		s->self_exe_map = true;	/* the main program's text (not valgrind's) */
	if (r->type == IPTCAP_SB_MMAP && !strcmp(r->name, "[vdso]"))
		s->any_vdso = true;
	return 0;
}

static void test_snapshot(void)
{
	struct iptcap_snapshot_stats st;
	struct snap_check s = { .self = (uint32_t)getpid() };
	FILE *f = fopen("/proc/self/comm", "r");

	if (!f || !fgets(s.comm, sizeof(s.comm), f))
		strcpy(s.comm, "?");
	s.comm[strcspn(s.comm, "\n")] = '\0';
	if (f)
		fclose(f);

	int rc = iptcap_proc_snapshot(NULL, snap_fn, &s, &st);

	CHECK(rc == 0 && st.processes >= 1 &&
	      st.threads >= st.processes && st.maps >= 1, "snapshot of /proc: %llu processes, "
	      "%llu threads, %llu maps", (unsigned long long)st.processes,
	      (unsigned long long)st.threads, (unsigned long long)st.maps);
	CHECK(s.self_comm, "snapshot has this process's comm");
	CHECK(s.self_exe_map, "snapshot has this executable's mapping with its build-id");
	CHECK(s.any_vdso, "snapshot has a [vdso] mapping");
}

static struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* Record sideband around fork + exec of /bin/true; check what the file says. */
static void test_record(const char *dir)
{
	struct capture c;
	char msg[512], path[4096], line[65536];
	pid_t pid;
	int status, i, rc;
	FILE *f;
	bool header = false, comm = false, mmap_true = false, exit_rec = false, fork_rec = false,
	     mono = true, snap_first = true, timed_seen = false, switch_rec = false,
	     vdso_ok = false, all_json = true;
	uint64_t t_fork = 0, t_comm = 0, t_mmap = 0, t_exit = 0;
	static uint64_t cpu_last[1024];
	bool cpu_mono = true;
	unsigned long lines = 0;
	struct json_object *meta, *sbj;

	memset(&c, 0, sizeof(c));
	c.dir = dir;
	c.complete = true;
	/* CHECK evaluates its condition twice: calls with effects go first. */
	rc = capture_sb_begin(&c, true, msg, sizeof(msg));
	CHECK(rc == 0, "sideband begins: %s", c.sb.sb ? "perf events open" : c.sb.perf_skipped);
	if (!c.sb.sb) {
		printf("# SKIP real sideband checks: %s\n", c.sb.perf_skipped);
		capture_sb_end(&c);
		capture_sb_free(&c);
		return;
	}
	pid = fork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "/bin/true ran (pid %d)", (int)pid);
	for (i = 0; i < 5; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
		capture_sb_drain(&c);
	}
	capture_sb_end(&c);
	CHECK(c.complete && !c.sb.write_errno, "sideband written without error");
	CHECK(c.sb.counts[IPTCAP_SB_MMAP] && c.sb.counts[IPTCAP_SB_COMM] &&
	      c.sb.nr_cpus >= 1, "records counted: %llu mmap, %llu comm, %u CPUs",
	      (unsigned long long)c.sb.counts[IPTCAP_SB_MMAP],
	      (unsigned long long)c.sb.counts[IPTCAP_SB_COMM], c.sb.nr_cpus);

	snprintf(path, sizeof(path), "%s/%s", dir, CAPTURE_SIDEBAND);
	f = fopen(path, "r");
	CHECK(f != NULL, "sideband.jsonl exists");
	while (f && fgets(line, sizeof(line), f)) {
		struct json_object *o = json_tokener_parse(line), *tv;
		const char *type;
		uint64_t p;

		lines++;
		if (!o) {
			all_json = false;
			continue;
		}
		type = json_object_get_string(jget(o, "type"));
		if (lines == 1) {
			header = type && !strcmp(type, "header") &&
				 !strcmp(json_object_get_string(jget(o, "format")), "ipt-sideband") &&
				 json_object_get_int(jget(o, "version")) == 1;
			json_object_put(o);
			continue;
		}
		tv = jget(o, "time");
		if (!tv) {
			if (timed_seen)
				snap_first = false;
		} else {
			timed_seen = true;
		}
		p = (uint64_t)json_object_get_int64(jget(o, "pid"));
		if (!strcmp(type, "mmap") && !strcmp(json_object_get_string(jget(o, "file")), "[vdso]") &&
		    jget(o, "vdso"))
			vdso_ok = true;
		if (!strcmp(type, "switch"))
			switch_rec = true;
		if (tv) {
			/* Per CPU, the file keeps the kernel's (time) order. */
			uint64_t t = (uint64_t)json_object_get_int64(tv);
			int cpu = json_object_get_int(jget(o, "cpu"));

			if (cpu >= 0 && cpu < 1024) {
				if (t < cpu_last[cpu])
					cpu_mono = false;
				cpu_last[cpu] = t;
			}
		}
		if (p == (uint64_t)pid && tv) {
			uint64_t t = (uint64_t)json_object_get_int64(tv);

			if (!strcmp(type, "fork")) {
				fork_rec = true;
				t_fork = t;
			}
			if (!strcmp(type, "comm") && json_object_get_boolean(jget(o, "exec")) &&
			    !strcmp(json_object_get_string(jget(o, "comm")), "true")) {
				comm = true;
				t_comm = t;
			}
			if (!strcmp(type, "mmap") && strstr(json_object_get_string(jget(o, "file")),
							   "/true") &&
			    (json_object_get_int(jget(o, "prot")) & 4)) {
				mmap_true = true;
				t_mmap = t;
			}
			if (!strcmp(type, "exit")) {
				exit_rec = true;
				t_exit = t;
			}
		}
		json_object_put(o);
	}
	if (f)
		fclose(f);
	CHECK(all_json, "every line is JSON (%lu lines)", lines);
	CHECK(header, "the first line is the header, version 1");
	CHECK(snap_first, "snapshot records (time null) precede timed records");
	CHECK(fork_rec, "a fork record of pid %d", (int)pid);
	CHECK(comm, "a comm exec record 'true' of pid %d", (int)pid);
	CHECK(mmap_true, "an executable mmap of /bin/true in pid %d", (int)pid);
	CHECK(exit_rec, "an exit record of pid %d", (int)pid);
	mono = fork_rec && comm && mmap_true && exit_rec && t_fork <= t_comm &&
	       t_comm <= t_mmap && t_mmap <= t_exit && t_fork > 0;
	CHECK(mono, "pid %d: times of fork <= exec <= mmap <= exit (%llu %llu %llu %llu)",
	      (int)pid, (unsigned long long)t_fork, (unsigned long long)t_comm,
	      (unsigned long long)t_mmap, (unsigned long long)t_exit);
	CHECK(cpu_mono, "the records of each CPU have monotonic times");
	CHECK(switch_rec, "context switch records");
	CHECK(vdso_ok, "[vdso] mappings name a saved vDSO image");
	snprintf(path, sizeof(path), "%s/vdso0.so", dir);
	{
		unsigned char magic[4] = { 0 };
		int fd = open(path, O_RDONLY);
		bool elf = fd >= 0 && read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4);

		CHECK(elf, "vdso0.so is an ELF image");
		if (fd >= 0)
			close(fd);
	}
	/* The metadata describes it. */
	c.caps.nr_cpus = 1;
	sbj = NULL;
	meta = capture_meta_json(&c);
	sbj = jget(meta, "sideband");
	CHECK(sbj && !strcmp(json_object_get_string(jget(sbj, "file")), CAPTURE_SIDEBAND) &&
	      json_object_get_boolean(jget(sbj, "perf")) && !jget(sbj, "perf_skipped") &&
	      json_object_get_int64(jget(jget(sbj, "records"), "mmap")) > 0 &&
	      json_object_array_length(jget(sbj, "cpus")) == c.sb.nr_cpus &&
	      json_object_array_length(jget(sbj, "vdso")) >= 1 &&
	      json_object_get_int64(jget(jget(sbj, "snapshot"), "processes")) > 0,
	      "meta.json's sideband object");
	json_object_put(meta);
	capture_sb_free(&c);
}

/* A refused perf_event_open: the capture says so and has the snapshot. */
static void test_no_perf(const char *dir)
{
	struct capture c;
	struct json_object *meta, *sbj;
	char msg[256];
	int rc;

	memset(&c, 0, sizeof(c));
	c.dir = dir;
	c.complete = true;
	snprintf(c.sb.perf_skipped, sizeof(c.sb.perf_skipped), "disabled with --no-sideband");
	rc = capture_sb_begin(&c, false, msg, sizeof(msg));
	CHECK(rc == 0 && !c.sb.sb, "snapshot-only sideband begins");
	capture_sb_end(&c);
	meta = capture_meta_json(&c);
	sbj = jget(meta, "sideband");
	CHECK(sbj && !json_object_get_boolean(jget(sbj, "perf")) &&
	      !strcmp(json_object_get_string(jget(sbj, "perf_skipped")),
		      "disabled with --no-sideband") &&
	      jget(sbj, "snapshot") && c.complete, "meta.json says why there is no perf sideband");
	json_object_put(meta);
	capture_sb_free(&c);
}

/* As an unprivileged user, CPU-wide events are refused with a message. */
static void test_refused(void)
{
	int paranoid = 2, st = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int pfd[2];
	char msg[512] = "";
	pid_t pid;
	ssize_t n;

	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = 2;
		fclose(f);
	}
	if (geteuid() != 0 || paranoid < 1 || pipe(pfd)) {
		printf("# SKIP refusal check: needs root to drop privileges and "
		       "perf_event_paranoid >= 1 (it is %d)\n", paranoid);
		return;
	}
	pid = fork();
	if (pid == 0) {
		struct iptcap_sb *sb = NULL;
		enum iptcap_err err;
		char m[512] = "";

		close(pfd[0]);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(3);
		err = iptcap_sb_open(NULL, &sb, m, sizeof(m));
		if (write(pfd[1], m, strlen(m) + 1) < 0)
			_exit(4);
		_exit(err == IPTCAP_ERR_PERMISSION && !sb ? 0 : 1);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(msg, "perf_event_paranoid") &&
	      strstr(msg, "CAP_PERFMON"), "unprivileged: refused as a permission error: %s", msg);
}

int main(void)
{
	char dir[] = "/tmp/ipt-test-sideband.XXXXXX";
	char dir2[64], cmd[160];

	test_parse();
	test_time_conv();
	test_build_id();
	test_snapshot();
	test_refused();
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return tap_done();
	}
	test_record(dir);
	snprintf(dir2, sizeof(dir2), "%s/np", dir);
	mkdir(dir2, 0755);
	test_no_perf(dir2);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		CHECK(0, "cleanup");
	return tap_done();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool: the on-disk capture format, version 1 (see
 * Documentation/capture-format.rst): a directory holding one raw cpuN.pt
 * file per traced CPU, meta.json, and the sideband (sideband.jsonl and
 * vdsoN.so), all JSON written with json-c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ipttool.h"

#ifndef IPT_VERSION
#define IPT_VERSION "unknown"
#endif

void capture_incomplete(struct capture *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->complete)
		return;
	c->complete = false;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
}

int write_full(int fd, const void *buf, size_t len, size_t *done)
{
	const char *p = buf;

	if (done)
		*done = 0;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return EIO;
		p += n;
		len -= (size_t)n;
		if (done)
			*done += (size_t)n;
	}
	return 0;
}

void capture_time_conv(struct capture *c)
{
	struct iptcap_time_conv tc;

	if (iptcap_read_time_conv(&tc, c->time_conv_skipped, sizeof(c->time_conv_skipped)))
		return;
	c->time_shift = tc.time_shift;
	c->time_mult = tc.time_mult;
	c->time_zero = tc.time_zero;
	c->have_time_conv = true;
}

/*
 * fsync @fd (EINVAL: a file that cannot be, /dev/full in the tests) and
 * close it: 0 or the first errno, @err if already set.
 */
static int sync_close(int fd, int err)
{
	if (!err && fsync(fd) && errno != EINVAL)
		err = errno;
	if (close(fd) && !err && errno != EINTR)
		err = errno;
	return err;
}

/* ---- sideband ------------------------------------------------------------ */

static const char *const sb_type_name[IPTCAP_SB_OTHER + 1] = {
	[IPTCAP_SB_MMAP] = "mmap",
	[IPTCAP_SB_COMM] = "comm",
	[IPTCAP_SB_FORK] = "fork",
	[IPTCAP_SB_EXIT] = "exit",
	[IPTCAP_SB_SWITCH] = "switch",
	[IPTCAP_SB_LOST] = "lost",
	[IPTCAP_SB_OTHER] = "other",
};

/* Save a vDSO image as vdsoN.so unless an equal one is saved; its index or -1. */
static int vdso_save(struct capture *c, const unsigned char *data, size_t size,
		     const char *source)
{
	struct capture_sb *sb = &c->sb;
	char path[4096];
	unsigned int i;
	int fd, err;

	for (i = 0; i < sb->nr_vdso; i++)
		if (sb->vdso[i].size == size && !memcmp(sb->vdso[i].data, data, size))
			return (int)i;
	if (sb->nr_vdso == CAPTURE_MAX_VDSO)
		return -1;
	sb->vdso[i].data = malloc(size);
	if (!sb->vdso[i].data)
		return -1;
	memcpy(sb->vdso[i].data, data, size);
	sb->vdso[i].size = size;
	snprintf(sb->vdso[i].source, sizeof(sb->vdso[i].source), "%s", source);
	snprintf(path, sizeof(path), "%s/vdso%u.so", c->dir, i);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	err = fd < 0 ? errno : sync_close(fd, write_full(fd, data, size, NULL));
	if (err) {
		free(sb->vdso[i].data);
		sb->vdso[i].data = NULL;
		if (!sb->write_errno)
			sb->write_errno = err;
		capture_incomplete(c, "writing vdso%u.so failed: %s", i, strerror(err));
		return -1;
	}
	sb->nr_vdso++;
	return (int)i;
}

/* The tool's own vDSO: the image of every 64-bit process on this kernel. */
static void vdso_self(struct capture *c)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	unsigned long long a, b;
	char line[512];
	FILE *f;

	if (!base)
		return;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &a, &b) == 2 &&
		    a == base && b > a && b - a <= (1 << 20)) {
			vdso_save(c, (const unsigned char *)base, (size_t)(b - a), "ipttool");
			break;
		}
	fclose(f);
}

/*
 * The image behind a [vdso] mapping of @pid: read from /proc/PID/mem when
 * the process still exists, else the only saved image of that size.
 */
static int vdso_lookup(struct capture *c, uint32_t pid, uint64_t addr, uint64_t len)
{
	char path[64], src[32];
	unsigned char *buf;
	unsigned int i;
	int fd, idx = -1, match = -1, matches = 0;

	if (!len || len > (1 << 20))
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	buf = malloc((size_t)len);
	fd = buf ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd >= 0 && pread(fd, buf, (size_t)len, (off_t)addr) == (ssize_t)len) {
		snprintf(src, sizeof(src), "pid %u", pid);
		idx = vdso_save(c, buf, (size_t)len, src);
	}
	if (fd >= 0)
		close(fd);
	free(buf);
	if (idx >= 0)
		return idx;
	for (i = 0; i < c->sb.nr_vdso; i++)
		if (c->sb.vdso[i].size == len) {
			match = (int)i;
			matches++;
		}
	return matches == 1 ? match : -1;
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

static struct json_object *addr(uint64_t v)
{
	return json_object_new_uint64(v);
}

/*
 * Context switches are most of the sideband (tens of thousands a second
 * per CPU under load): one object is kept and its values replaced, rather
 * than building a new one for each.
 */
static struct json_object *switch_obj(const struct iptcap_sb_rec *r)
{
	static struct json_object *o, *v[8];
	static const char *const keys[8] = { "time", "cpu", "pid", "tid", "out", "preempt",
					     "next_prev_pid", "next_prev_tid" };
	int i;

	if (!o) {
		o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string("switch"));
		for (i = 0; i < 8; i++) {
			v[i] = i == 4 || i == 5 ? json_object_new_boolean(0) : json_object_new_int64(0);
			json_object_object_add(o, keys[i], v[i]);
		}
	}
	json_object_set_int64(v[0], (int64_t)r->time);
	json_object_set_int64(v[1], r->cpu);
	json_object_set_int64(v[2], r->pid);
	json_object_set_int64(v[3], r->tid);
	json_object_set_boolean(v[4], r->switch_out);
	json_object_set_boolean(v[5], r->preempt);
	json_object_set_int64(v[6], r->next_prev_pid);
	json_object_set_int64(v[7], r->next_prev_tid);
	return json_object_get(o);	/* the caller's reference */
}

int capture_sb_write_rec(struct capture *c, const struct iptcap_sb_rec *r)
{
	struct capture_sb *sb = &c->sb;
	struct json_object *o;
	const char *s;
	int err = 0;

	if (!sb->f || r->type < IPTCAP_SB_MMAP || r->type > IPTCAP_SB_OTHER)
		return 0;
	if (r->type == IPTCAP_SB_LOST)
		sb->lost += r->lost;
	if (!r->snapshot)
		sb->counts[r->type]++;
	if (r->type == IPTCAP_SB_OTHER)
		return 0;
	o = r->type == IPTCAP_SB_SWITCH && !r->snapshot ? switch_obj(r) : json_object_new_object();
	if (json_object_object_length(o))
		goto serialize;
	json_object_object_add(o, "type", json_object_new_string(sb_type_name[r->type]));
	json_object_object_add(o, "time", r->snapshot ? NULL : u64(r->time));
	json_object_object_add(o, "cpu", r->snapshot ? NULL : u64(r->cpu));
	json_object_object_add(o, "pid", u64(r->pid));
	json_object_object_add(o, "tid", u64(r->tid));
	switch (r->type) {
	case IPTCAP_SB_MMAP: {
		json_object_object_add(o, "start", addr(r->addr));
		json_object_object_add(o, "len", addr(r->len));
		json_object_object_add(o, "pgoff", addr(r->pgoff));
		json_object_object_add(o, "prot", u64(r->prot));
		json_object_object_add(o, "flags", u64(r->flags));
		json_object_object_add(o, "file", json_object_new_string(r->name));
		if (r->build_id_size) {
			char hex[41];
			unsigned int i;

			for (i = 0; i < r->build_id_size; i++)
				snprintf(hex + 2 * i, 3, "%02x", r->build_id[i]);
			json_object_object_add(o, "build_id", json_object_new_string(hex));
		} else {
			json_object_object_add(o, "build_id", NULL);
		}
		if (r->has_dev) {
			json_object_object_add(o, "maj", u64(r->maj));
			json_object_object_add(o, "min", u64(r->min));
			json_object_object_add(o, "ino", u64(r->ino));
			if (!r->snapshot)
				json_object_object_add(o, "ino_generation", u64(r->ino_generation));
		}
		if (!strcmp(r->name, "[vdso]")) {
			int v = vdso_lookup(c, r->pid, r->addr, r->len);
			char name[32];

			snprintf(name, sizeof(name), "vdso%d.so", v);
			json_object_object_add(o, "vdso", v >= 0 ? json_object_new_string(name) : NULL);
		}
		break;
	}
	case IPTCAP_SB_COMM:
		json_object_object_add(o, "comm", json_object_new_string(r->name));
		json_object_object_add(o, "exec", json_object_new_boolean(r->exec));
		break;
	case IPTCAP_SB_FORK:
	case IPTCAP_SB_EXIT:
		json_object_object_add(o, "ppid", u64(r->ppid));
		json_object_object_add(o, "ptid", u64(r->ptid));
		break;
	case IPTCAP_SB_SWITCH:
		json_object_object_add(o, "out", json_object_new_boolean(r->switch_out));
		json_object_object_add(o, "preempt", json_object_new_boolean(r->preempt));
		json_object_object_add(o, "next_prev_pid", u64(r->next_prev_pid));
		json_object_object_add(o, "next_prev_tid", u64(r->next_prev_tid));
		break;
	case IPTCAP_SB_LOST:
		json_object_object_add(o, "lost", u64(r->lost));
		break;
	default:
		break;
	}
serialize:
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					   JSON_C_TO_STRING_NOSLASHESCAPE);
	if (sb->spool && !r->snapshot) {
		/* Perf records read during the snapshot wait until it is written. */
		size_t n = strlen(s);

		if (sb->spool_len + n + 1 > sb->spool_cap) {
			size_t cap = (sb->spool_len + n + 1) * 2;
			char *p = realloc(sb->spool, cap);

			if (!p) {
				json_object_put(o);
				sb->write_errno = ENOMEM;
				capture_incomplete(c, "writing %s failed: out of memory",
						   CAPTURE_SIDEBAND);
				return ENOMEM;
			}
			sb->spool = p;
			sb->spool_cap = cap;
		}
		memcpy(sb->spool + sb->spool_len, s, n);
		sb->spool[sb->spool_len + n] = '\n';
		sb->spool_len += n + 1;
	} else if (!sb->write_errno && (fputs(s, sb->f) == EOF || fputc('\n', sb->f) == EOF)) {
		err = errno ? errno : EIO;
	}
	json_object_put(o);
	if (err) {
		sb->write_errno = err;
		capture_incomplete(c, "writing %s failed: %s", CAPTURE_SIDEBAND, strerror(err));
		return err;
	}
	sb->lines++;
	return 0;
}

static int sb_rec_fn(const struct iptcap_sb_rec *r, void *arg)
{
	capture_sb_write_rec(arg, r);
	return 0;	/* a write error is kept; drain the rings anyway */
}

/* A snapshot record; the perf rings are drained (into the spool) meanwhile. */
static int snap_rec_fn(const struct iptcap_sb_rec *r, void *arg)
{
	struct capture *c = arg;

	capture_sb_write_rec(c, r);
	if (c->sb.sb && !(++c->sb.snap_recs % 256))
		iptcap_sb_read(c->sb.sb, sb_rec_fn, c);
	return 0;
}

int capture_sb_begin(struct capture *c, bool perf, char *msg, size_t len)
{
	struct capture_sb *sb = &c->sb;
	struct json_object *h;
	char path[4096];
	enum iptcap_err err;
	int e;

	snprintf(path, sizeof(path), "%s/" CAPTURE_SIDEBAND, c->dir);
	sb->f = fopen(path, "we");
	if (!sb->f) {
		e = errno;
		snprintf(msg, len, "cannot create %s: %s", path, strerror(e));
		return -1;
	}
	h = json_object_new_object();
	json_object_object_add(h, "type", json_object_new_string("header"));
	json_object_object_add(h, "format", json_object_new_string("ipt-sideband"));
	json_object_object_add(h, "version", json_object_new_int(CAPTURE_SIDEBAND_VERSION));
	if (fprintf(sb->f, "%s\n", json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN)) < 0)
		sb->write_errno = errno ? errno : EIO;
	json_object_put(h);
	if (perf) {
		err = iptcap_sb_open(NULL, &sb->sb, sb->perf_skipped, sizeof(sb->perf_skipped));
		if (!err) {
			sb->build_ids = iptcap_sb_build_ids(sb->sb);
			err = iptcap_sb_enable(sb->sb);
			if (err) {
				snprintf(sb->perf_skipped, sizeof(sb->perf_skipped),
					 "enabling the perf sideband events failed: %s",
					 iptcap_strerror(err));
				iptcap_sb_close(sb->sb);
				sb->sb = NULL;
			}
		}
	} else if (!sb->perf_skipped[0]) {
		snprintf(sb->perf_skipped, sizeof(sb->perf_skipped), "not recorded");
	}
	vdso_self(c);
	/*
	 * After the events are enabled: nothing falls between the two.  The
	 * rings are drained while the snapshot is read, so that they do not
	 * overflow on a large system; those records are written after it.
	 */
	sb->spool = malloc(1);
	sb->spool_cap = sb->spool ? 1 : 0;
	iptcap_proc_snapshot(NULL, snap_rec_fn, c, &sb->snap);
	sb->have_snap = true;
	if (sb->spool) {
		if (sb->spool_len && !sb->write_errno) {
			if (fwrite(sb->spool, 1, sb->spool_len, sb->f) != sb->spool_len) {
				sb->write_errno = errno ? errno : EIO;
				capture_incomplete(c, "writing %s failed: %s", CAPTURE_SIDEBAND,
						   strerror(sb->write_errno));
			}
		}
		free(sb->spool);
		sb->spool = NULL;
		sb->spool_len = sb->spool_cap = 0;
	}
	if (sb->write_errno) {
		snprintf(msg, len, "writing %s failed: %s", path, strerror(sb->write_errno));
		return -1;
	}
	return 0;
}

void capture_sb_wait(struct capture *c, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };

	if (!c->sb.sb || iptcap_sb_wait(c->sb.sb, timeout_ms) < 0)
		nanosleep(&ts, NULL);
}

int capture_sb_drain(struct capture *c)
{
	if (c->sb.sb)
		iptcap_sb_read(c->sb.sb, sb_rec_fn, c);
	return c->sb.write_errno;
}

void capture_sb_end(struct capture *c)
{
	struct capture_sb *sb = &c->sb;
	unsigned int i;
	int err = 0;

	if (sb->sb) {
		iptcap_sb_disable(sb->sb);
		capture_sb_drain(c);
		sb->nr_cpus = iptcap_sb_nr_cpus(sb->sb);
		sb->cpus = calloc(sb->nr_cpus ? sb->nr_cpus : 1, sizeof(*sb->cpus));
		for (i = 0; sb->cpus && i < sb->nr_cpus; i++)
			iptcap_sb_cpu_stats(sb->sb, i, &sb->cpus[i]);
		iptcap_sb_close(sb->sb);
		sb->sb = NULL;
	}
	if (!sb->f)
		return;
	if (fflush(sb->f))
		err = errno;
	if (!err && fsync(fileno(sb->f)) && errno != EINVAL)
		err = errno;
	if (fclose(sb->f) && !err)
		err = errno;
	sb->f = NULL;
	if (err && !sb->write_errno) {
		sb->write_errno = err;
		capture_incomplete(c, "writing %s failed: %s", CAPTURE_SIDEBAND, strerror(err));
	}
}

void capture_sb_free(struct capture *c)
{
	unsigned int i;

	if (c->sb.f)
		fclose(c->sb.f);
	c->sb.f = NULL;
	iptcap_sb_close(c->sb.sb);
	c->sb.sb = NULL;
	for (i = 0; i < c->sb.nr_vdso; i++)
		free(c->sb.vdso[i].data);
	c->sb.nr_vdso = 0;
	free(c->sb.cpus);
	c->sb.cpus = NULL;
}

static struct json_object *sideband_json(const struct capture *c)
{
	const struct capture_sb *sb = &c->sb;
	struct json_object *o = json_object_new_object(), *r, *arr;
	unsigned int i;
	int t;

	json_object_object_add(o, "file", sb->lines || sb->have_snap ?
			       json_object_new_string(CAPTURE_SIDEBAND) : NULL);
	json_object_object_add(o, "version", json_object_new_int(CAPTURE_SIDEBAND_VERSION));
	json_object_object_add(o, "perf", json_object_new_boolean(sb->cpus || sb->sb));
	json_object_object_add(o, "perf_skipped", sb->cpus || sb->sb ? NULL :
			       json_object_new_string(sb->perf_skipped[0] ? sb->perf_skipped :
						      "not recorded"));
	json_object_object_add(o, "build_ids", json_object_new_boolean(sb->build_ids));
	if (sb->have_snap) {
		r = json_object_new_object();
		json_object_object_add(r, "processes", u64(sb->snap.processes));
		json_object_object_add(r, "threads", u64(sb->snap.threads));
		json_object_object_add(r, "maps", u64(sb->snap.maps));
		json_object_object_add(r, "vanished", u64(sb->snap.vanished));
		json_object_object_add(o, "snapshot", r);
	} else {
		json_object_object_add(o, "snapshot", NULL);
	}
	r = json_object_new_object();
	for (t = IPTCAP_SB_MMAP; t <= IPTCAP_SB_OTHER; t++)
		json_object_object_add(r, sb_type_name[t], u64(sb->counts[t]));
	json_object_object_add(o, "records", r);
	json_object_object_add(o, "lines", u64(sb->lines));
	json_object_object_add(o, "lost_records", u64(sb->lost));
	arr = json_object_new_array();
	for (i = 0; sb->cpus && i < sb->nr_cpus; i++) {
		r = json_object_new_object();
		json_object_object_add(r, "cpu", u64(sb->cpus[i].cpu));
		json_object_object_add(r, "records", u64(sb->cpus[i].records));
		json_object_object_add(r, "lost", u64(sb->cpus[i].lost));
		json_object_object_add(r, "bytes", u64(sb->cpus[i].bytes));
		json_object_array_add(arr, r);
	}
	json_object_object_add(o, "cpus", arr);
	arr = json_object_new_array();
	for (i = 0; i < sb->nr_vdso; i++) {
		char name[32];

		r = json_object_new_object();
		snprintf(name, sizeof(name), "vdso%u.so", i);
		json_object_object_add(r, "file", json_object_new_string(name));
		json_object_object_add(r, "size", u64(sb->vdso[i].size));
		json_object_object_add(r, "source", json_object_new_string(sb->vdso[i].source));
		json_object_array_add(arr, r);
	}
	json_object_object_add(o, "vdso", arr);
	json_object_object_add(o, "write_error", sb->write_errno ?
			       json_object_new_string(strerror(sb->write_errno)) : NULL);
	return o;
}

int capture_write_trace(struct capture *c, struct capture_trace *tr,
			const void *buf, const struct iptcap_seg *segs, int nr_segs)
{
	char name[4096];
	int fd = -1, err = 0, i;

	if (!tr->file[0])
		snprintf(tr->file, sizeof(tr->file), "cpu%u.pt", tr->cpu);
	if ((size_t)snprintf(name, sizeof(name), "%s/%s", c->dir, tr->file) >= sizeof(name))
		errno = ENAMETOOLONG;
	else
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = errno;
		goto out;
	}
	for (i = 0; i < nr_segs && !err; i++) {
		const char *p = (const char *)buf + segs[i].off;
		uint64_t left = segs[i].len;
		size_t done;

		err = write_full(fd, p, (size_t)left, &done);
		tr->written += done;
	}
	err = sync_close(fd, err);
out:
	tr->write_errno = err;
	if (err)
		capture_incomplete(c, "writing %s failed after %" PRIu64 " bytes: %s",
				   tr->file, tr->written, strerror(err));
	return err;
}

static struct capture_stream_slot *stream_slot(struct capture *c, unsigned int trace)
{
	return trace < c->nr_slots ? &c->slots[trace] : NULL;
}

int capture_stream_gap(const struct iptcap_stream_trace *tr, const struct ipt_gap *gap,
		       void *user)
{
	struct capture *c = user;
	struct capture_stream_slot *sl = stream_slot(c, tr->trace);

	if (!sl)
		return EINVAL;
	if (c->gaps_listed >= CAPTURE_GAPS_LISTED) {
		sl->unlisted++;	/* counted: no gap goes unsaid */
		return 0;
	}
	if (sl->nr_gaps == sl->cap) {
		size_t cap = sl->cap ? sl->cap * 2 : 16;
		struct ipt_gap *g = realloc(sl->gaps, cap * sizeof(*g));

		if (!g) {
			sl->unlisted++;
			return 0;
		}
		sl->gaps = g;
		sl->cap = cap;
	}
	sl->gaps[sl->nr_gaps++] = *gap;
	c->gaps_listed++;
	return 0;
}

bool capture_snapshot_due(uint64_t now, uint64_t last, uint64_t cost)
{
	uint64_t wait = cost > UINT64_MAX / CAPTURE_SNAPSHOT_SHARE ? UINT64_MAX :
			cost * CAPTURE_SNAPSHOT_SHARE;

	if (wait < 1000000000ull)
		wait = 1000000000ull;
	return now - last >= wait;
}

int capture_stream_unlisted(const struct iptcap_stream_trace *tr, uint64_t nr, void *user)
{
	struct capture_stream_slot *sl = stream_slot(user, tr->trace);

	if (!sl)
		return EINVAL;
	sl->unlisted += nr;
	return 0;
}

uint64_t capture_nr_gaps(const struct capture *c)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < c->nr_traces; i++)
		n += c->traces[i].nr_gaps + c->traces[i].gaps_unlisted;
	return n;
}

/* The gaps the consumer collected for trace slot @slot, into @tr. */
static void trace_gaps_from_slot(const struct capture *c, struct capture_trace *tr,
				 unsigned int slot)
{
	if (slot < c->nr_slots) {
		tr->gaps = c->slots[slot].gaps;
		tr->nr_gaps = c->slots[slot].nr_gaps;
		tr->gaps_unlisted = c->slots[slot].unlisted;
	}
}

int capture_collect_stream(struct iptcap *ipt, struct capture *c,
			   struct iptcap_stream_files *files)
{
	unsigned int cpu, count = c->per_thread ? c->config.max_threads : c->caps.nr_cpus;
	enum iptcap_err err;
	size_t i;
	int rc;

	c->nr_traces = 0;
	memset(c->traces, 0, (count ? count : 1) * sizeof(*c->traces));
	for (cpu = 0; cpu < count; cpu++) {
		struct capture_trace *tr = &c->traces[c->nr_traces];
		struct iptcap_stream_trace st;

		err = iptcap_trace_state(ipt, cpu, &tr->ts);
		if (err == IPTCAP_ERR_NO_SUCH_CPU)
			continue;
		if (err == IPTCAP_ERR_NO_SUCH_TRACE)
			break;
		tr->cpu = cpu;
		c->nr_traces++;
		if (err) {
			tr->read_failed = true;
			capture_incomplete(c, "reading the state of %s%u failed: %s",
					   c->per_thread ? "trace " : "cpu", cpu, iptcap_strerror(err));
			continue;
		}
		trace_gaps_from_slot(c, tr, cpu);
		/*
		 * No byte came: an empty file, created by the sink so that its
		 * one naming rule names it (never over another trace's file).
		 */
		st.trace = cpu;
		st.cpu = c->per_thread ? IPT_TRACE_NONE : cpu;
		st.tid = c->per_thread ? tr->ts.tid : 0;
		if (!iptcap_stream_files_get(files, cpu, NULL, NULL)) {
			err = iptcap_stream_files_touch(files, &st);
			if (err)
				ipt_err("creating the file of %s%u in %s: %s",
					c->per_thread ? "trace " : "cpu", cpu, c->dir,
					iptcap_strerror(err));
		}
	}
	/* The data on disk before the metadata that says it is there. */
	iptcap_stream_files_sync(files);
	for (i = 0; i < c->nr_traces; i++) {
		struct capture_trace *tr = &c->traces[i];
		const char *name;

		if (tr->read_failed)
			continue;
		name = iptcap_stream_files_get(files, tr->cpu, &tr->written, &tr->write_errno);
		if (!name) {
			snprintf(tr->file, sizeof(tr->file), "%s", "");
			capture_incomplete(c, "no file for %s%u", c->per_thread ? "trace " : "cpu",
					   tr->cpu);
			continue;
		}
		snprintf(tr->file, sizeof(tr->file), "%s", name);
		if (tr->write_errno)
			capture_incomplete(c, "writing %s failed after %" PRIu64 " bytes: %s",
					   tr->file, tr->written, strerror(tr->write_errno));
		else if (tr->written != tr->ts.bytes_captured)
			capture_incomplete(c, "%s: %" PRIu64 " bytes written of %" PRIu64
					   " the unit wrote", tr->file, tr->written,
					   (uint64_t)tr->ts.bytes_captured);
	}
	rc = capture_write_meta(c);
	if (rc) {
		ipt_err("cannot write %s/%s: %s; the capture stays marked incomplete",
			c->dir, CAPTURE_META, strerror(rc));
		capture_incomplete(c, "writing the metadata failed: %s", strerror(rc));
	}
	return c->complete ? 0 : 1;
}

static int write_meta_draft(const struct capture *c);

int capture_snapshot_stream(struct iptcap *ipt, struct capture *c,
			    const struct iptcap_stream_files *files)
{
	unsigned int cpu, count = c->per_thread ? c->config.max_threads : c->caps.nr_cpus;
	struct capture draft;
	enum iptcap_err err;

	c->nr_traces = 0;
	memset(c->traces, 0, (count ? count : 1) * sizeof(*c->traces));
	for (cpu = 0; cpu < count; cpu++) {
		struct capture_trace *tr = &c->traces[c->nr_traces];
		const char *name;

		err = iptcap_trace_state(ipt, cpu, &tr->ts);
		if (err == IPTCAP_ERR_NO_SUCH_TRACE)
			break;
		name = err ? NULL : iptcap_stream_files_get(files, cpu, &tr->written,
							     &tr->write_errno);
		if (!name)	/* not in the session, or no byte yet: no file */
			continue;
		tr->cpu = cpu;
		snprintf(tr->file, sizeof(tr->file), "%s", name);
		trace_gaps_from_slot(c, tr, cpu);
		c->nr_traces++;
	}
	/* as it stands, not finished; the reserve stays the final one's */
	draft = *c;
	draft.complete = false;
	snprintf(draft.reason, sizeof(draft.reason), "%s", CAPTURE_UNFINISHED);
	return write_meta_draft(&draft);
}

static struct json_object *gaps_json(const struct capture *c, const struct capture_trace *tr)
{
	struct json_object *arr = json_object_new_array();
	size_t i;

	for (i = 0; i < tr->nr_gaps; i++) {
		const struct ipt_gap *g = &tr->gaps[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "offset", u64(g->offset));
		json_object_object_add(o, "tsc_start", u64(g->tsc_start));
		json_object_object_add(o, "tsc_end", g->tsc_end ? u64(g->tsc_end) : NULL);
		json_object_object_add(o, "bytes_lost", g->bytes_lost == IPT_GAP_BYTES_UNKNOWN ?
				       NULL : u64(g->bytes_lost));
		json_object_object_add(o, "cpu", u64(g->cpu));
		if (c->per_thread)
			json_object_object_add(o, "tid", u64(tr->ts.tid));
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *stream_json(const struct capture *c)
{
	struct json_object *o = json_object_new_object();
	uint64_t gaps = 0, unlisted = 0, known = 0, unknown = 0;
	size_t i, k;

	for (i = 0; i < c->nr_traces; i++) {
		const struct capture_trace *tr = &c->traces[i];

		gaps += tr->nr_gaps;
		unlisted += tr->gaps_unlisted;
		known += tr->ts.gap_bytes;
		for (k = 0; k < tr->nr_gaps; k++)
			unknown += tr->gaps[k].bytes_lost == IPT_GAP_BYTES_UNKNOWN;
	}
	json_object_object_add(o, "enabled", json_object_new_boolean(c->stream));
	json_object_object_add(o, "fallback", c->stream_fallback[0] ?
			       json_object_new_string(c->stream_fallback) : NULL);
	if (c->stream) {
		json_object_object_add(o, "regions", c->config.nr_regions ?
				       u64(c->config.nr_regions) : u64(IPT_STREAM_DEF_REGIONS));
		json_object_object_add(o, "bytes", u64(c->stream_bytes));
		json_object_object_add(o, "seconds", json_object_new_double(c->stream_secs));
		json_object_object_add(o, "gaps", u64(gaps + unlisted));
		json_object_object_add(o, "gaps_itemised", u64(gaps));
		json_object_object_add(o, "gaps_unlisted", u64(unlisted));
		json_object_object_add(o, "gaps_of_unknown_size", u64(unknown));
		json_object_object_add(o, "gap_bytes", u64(known));
	}
	return o;
}

static const char *loss_name(enum iptcap_err e)
{
	switch (e) {
	case IPTCAP_ERR_OVERWRITTEN:
		return "overwritten";
	case IPTCAP_ERR_TRUNCATED:
		return "truncated";
	case IPTCAP_ERR_HW_ERROR:
		return "hw_error";
	default:
		return "none";
	}
}

/* What a per-thread capture ran: its command, or the threads of -p. */
static struct json_object *program_json(const struct capture *c)
{
	const struct capture_prog *p = &c->prog;
	struct json_object *o = json_object_new_object(), *arr;
	unsigned int i;

	arr = json_object_new_array();
	for (i = 0; p->argv && p->argv[i]; i++)
		json_object_array_add(arr, json_object_new_string(p->argv[i]));
	json_object_object_add(o, "argv", p->argv ? arr : NULL);
	if (!p->argv)
		json_object_put(arr);
	json_object_object_add(o, "pid", p->argv && p->pid > 0 ? u64((uint64_t)p->pid) : NULL);
	json_object_object_add(o, "exit_status", p->argv && p->exited ? u64((uint64_t)p->status) :
			       NULL);
	json_object_object_add(o, "signal", p->argv && p->signal ? u64((uint64_t)p->signal) : NULL);
	arr = json_object_new_array();
	for (i = 0; i < c->nr_tids; i++)
		json_object_array_add(arr, u64(c->tids[i]));
	json_object_object_add(o, "attached_tids", arr);
	return o;
}

struct json_object *capture_meta_json(const struct capture *c)
{
	struct json_object *o = json_object_new_object(), *cpu, *r, *cfg, *arr, *k;
	const struct ipt_config *ic = &c->config;
	struct utsname u;
	size_t i;

	json_object_object_add(o, "format", json_object_new_string(CAPTURE_FORMAT_NAME));
	json_object_object_add(o, "format_version", json_object_new_int(CAPTURE_FORMAT_VERSION));
	json_object_object_add(o, "complete", json_object_new_boolean(c->complete));
	json_object_object_add(o, "incomplete_reason",
			       c->complete ? NULL : json_object_new_string(c->reason));
	json_object_object_add(o, "tool", json_object_new_string("ipttool " IPT_VERSION));
	json_object_object_add(o, "mode", json_object_new_string(c->per_thread ? "thread" : "cpu"));
	json_object_object_add(o, "backend",
			       json_object_new_string(iptcap_backend_name(c->caps.backend) ?
						      iptcap_backend_name(c->caps.backend) : "unknown"));

	cpu = json_object_new_object();
	json_object_object_add(cpu, "vendor", json_object_new_string(c->caps.vendor));
	json_object_object_add(cpu, "family", u64(c->caps.family));
	json_object_object_add(cpu, "model", u64(c->caps.model));
	json_object_object_add(cpu, "stepping", u64(c->caps.stepping));
	r = json_object_new_object();
	json_object_object_add(r, "eax", u64(c->caps.cpuid_15.eax));
	json_object_object_add(r, "ebx", u64(c->caps.cpuid_15.ebx));
	json_object_object_add(r, "ecx", u64(c->caps.cpuid_15.ecx));
	json_object_object_add(r, "edx", u64(c->caps.cpuid_15.edx));
	json_object_object_add(cpu, "cpuid_15", r);
	json_object_object_add(cpu, "nom_freq", u64(c->caps.nom_freq));
	json_object_object_add(cpu, "mtc_freq_mask", u64(c->caps.mtc_freq_mask));
	json_object_object_add(o, "cpu", cpu);

	k = json_object_new_object();
	if (!uname(&u)) {
		json_object_object_add(k, "sysname", json_object_new_string(u.sysname));
		json_object_object_add(k, "release", json_object_new_string(u.release));
		json_object_object_add(k, "version", json_object_new_string(u.version));
		json_object_object_add(k, "machine", json_object_new_string(u.machine));
	}
	json_object_object_add(o, "kernel", k);

	cfg = json_object_new_object();
	json_object_object_add(cfg, "all_cpus",
			       json_object_new_boolean(ic->flags & IPT_CONFIG_ALL_CPUS));
	json_object_object_add(cfg, "buffer_size", u64(ic->buffer_size));
	json_object_object_add(cfg, "buffer",
			       json_object_new_string(ic->buffer_flags & IPT_BUFFER_STREAM ? "stream" :
						      ic->buffer_flags & IPT_BUFFER_STOP_ON_FULL ?
						      "stop-on-full" : "ring"));
	json_object_object_add(cfg, "user", json_object_new_boolean(ic->trace_flags & IPT_TRACE_USER));
	json_object_object_add(cfg, "kernel",
			       json_object_new_boolean(ic->trace_flags & IPT_TRACE_KERNEL));
	json_object_object_add(cfg, "branch",
			       json_object_new_boolean(ic->trace_flags & IPT_TRACE_BRANCH));
	json_object_object_add(cfg, "tsc", json_object_new_boolean(ic->trace_flags & IPT_TRACE_TSC));
	json_object_object_add(cfg, "mtc_freq", ic->trace_flags & IPT_TRACE_MTC ?
			       u64(ic->mtc_freq) : NULL);
	json_object_object_add(cfg, "cyc_thresh", ic->trace_flags & IPT_TRACE_CYC ?
			       u64(ic->cyc_thresh) : NULL);
	json_object_object_add(cfg, "psb_freq", u64(ic->psb_freq));
	json_object_object_add(cfg, "retcomp",
			       json_object_new_boolean(!(ic->trace_flags & IPT_TRACE_NO_RETCOMP)));
	json_object_object_add(cfg, "trace_flags", u64(ic->trace_flags));
	arr = json_object_new_array();
	for (i = 0; i < IPT_MAX_ADDR_RANGES; i++) {
		struct json_object *rg;

		if (ic->ranges[i].kind == IPT_RANGE_OFF)
			continue;
		rg = json_object_new_object();
		json_object_object_add(rg, "index", u64(i));
		json_object_object_add(rg, "kind", json_object_new_string(
			ic->ranges[i].kind == IPT_RANGE_STOP ? "stop" : "filter"));
		json_object_object_add(rg, "start", addr(ic->ranges[i].start));
		json_object_object_add(rg, "end", addr(ic->ranges[i].end));
		json_object_array_add(arr, rg);
	}
	json_object_object_add(cfg, "ranges", arr);
	json_object_object_add(cfg, "cr3_match", ic->trace_flags & IPT_TRACE_CR3_FILTER ?
			       addr(ic->cr3_match) : NULL);
	if (c->per_thread) {
		json_object_object_add(cfg, "max_threads", u64(ic->max_threads));
		json_object_object_add(cfg, "inherit", json_object_new_boolean(c->inherit));
	}
	json_object_object_add(o, "config", cfg);
	if (c->per_thread)
		json_object_object_add(o, "program", program_json(c));

	if (c->have_time_conv) {
		r = json_object_new_object();
		json_object_object_add(r, "time_shift", u64(c->time_shift));
		json_object_object_add(r, "time_mult", u64(c->time_mult));
		json_object_object_add(r, "time_zero", u64(c->time_zero));
		json_object_object_add(o, "time_conv", r);
	} else {
		json_object_object_add(o, "time_conv", NULL);
		json_object_object_add(o, "time_conv_skipped",
				       json_object_new_string(c->time_conv_skipped[0] ?
							      c->time_conv_skipped : "not attempted"));
	}
	json_object_object_add(o, "start_ns", u64(c->start_ns));
	json_object_object_add(o, "stop_ns", u64(c->stop_ns));

	arr = json_object_new_array();
	for (i = 0; i < c->nr_traces; i++) {
		const struct capture_trace *tr = &c->traces[i];
		const struct ipt_trace_state *ts = &tr->ts;
		struct json_object *t = json_object_new_object();
		char name[48];

		if (tr->file[0])
			snprintf(name, sizeof(name), "%s", tr->file);
		else
			snprintf(name, sizeof(name), "cpu%u.pt", tr->cpu);
		if (c->per_thread) {
			json_object_object_add(t, "trace", u64(tr->cpu));
			json_object_object_add(t, "tid", u64(ts->tid));
			json_object_object_add(t, "parent", ts->parent == IPT_TRACE_NONE ? NULL :
					       u64(ts->parent));
			json_object_object_add(t, "exited",
					       json_object_new_boolean(ts->status & IPT_TS_EXITED));
			json_object_object_add(t, "detached",
					       json_object_new_boolean(ts->status & IPT_TS_DETACHED));
			json_object_object_add(t, "inherited",
					       json_object_new_boolean(ts->status & IPT_TS_INHERITED));
			json_object_object_add(t, "inherit",
					       json_object_new_boolean(ts->status & IPT_TS_INHERIT));
			json_object_object_add(t, "missed", u64(ts->missed));
			json_object_object_add(t, "switches", u64(ts->switches));
			json_object_object_add(t, "busy", u64(ts->busy));
		} else {
			json_object_object_add(t, "cpu", u64(tr->cpu));
		}
		json_object_object_add(t, "file", json_object_new_string(name));
		json_object_object_add(t, "size", u64(tr->written));
		json_object_object_add(t, "bytes_valid", u64(ts->bytes_valid));
		json_object_object_add(t, "bytes_captured", u64(ts->bytes_captured));
		json_object_object_add(t, "buffer_size", u64(ts->buffer_size));
		json_object_object_add(t, "wrapped",
				       json_object_new_boolean(ts->status & IPT_TS_WRAPPED));
		json_object_object_add(t, "wrap_count", u64(ts->wrap_count));
		json_object_object_add(t, "stopped_full",
				       json_object_new_boolean(ts->status & IPT_TS_FULL));
		json_object_object_add(t, "bytes_lost", u64(ts->bytes_lost));
		json_object_object_add(t, "hw_error",
				       json_object_new_boolean(ts->status & IPT_TS_ERROR));
		json_object_object_add(t, "pmi_late",
				       json_object_new_boolean(ts->status & IPT_TS_PMI_LATE));
		json_object_object_add(t, "suspended",
				       json_object_new_boolean(ts->status & IPT_TS_SUSPENDED));
		json_object_object_add(t, "cut",
				       json_object_new_boolean(ts->status & IPT_TS_CUT));
		json_object_object_add(t, "loss", json_object_new_string(loss_name(iptcap_trace_loss(ts))));
		json_object_object_add(t, "write_error", tr->write_errno ?
				       json_object_new_string(strerror(tr->write_errno)) : NULL);
		if (c->stream) {
			json_object_object_add(t, "gaps", gaps_json(c, tr));
			json_object_object_add(t, "gaps_unlisted", u64(tr->gaps_unlisted));
			json_object_object_add(t, "gap_bytes", u64(ts->gap_bytes));
		}
		json_object_array_add(arr, t);
	}
	json_object_object_add(o, "traces", arr);
	json_object_object_add(o, "stream", stream_json(c));
	json_object_object_add(o, "sideband", sideband_json(c));
	return o;
}

/* Write @s padded with spaces to @pad bytes (JSON allows trailing space). */
static int write_padded(int fd, const char *s, size_t len, size_t pad)
{
	char spaces[4096];
	int err = write_full(fd, s, len, NULL);

	memset(spaces, ' ', sizeof(spaces));
	while (!err && len + 1 < pad) {
		size_t n = pad - len - 1 > sizeof(spaces) ? sizeof(spaces) : pad - len - 1;

		err = write_full(fd, spaces, n, NULL);
		len += n;
	}
	if (!err)
		err = write_full(fd, "\n", 1, NULL);
	return err;
}

/* DIR/NAME into @buf; ENAMETOOLONG if it does not fit. */
static int meta_path(char *buf, size_t size, const char *dir, const char *name)
{
	return (size_t)snprintf(buf, size, "%s/%s", dir, name) >= size ? ENAMETOOLONG : 0;
}

/*
 * fsync directory @dir, so that a rename in it survives a power loss
 * (rename(2) is atomic, not durable): 0 or errno (EINVAL: a filesystem
 * that cannot, as for files).
 */
static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return errno;
	if (fsync(fd) && errno != EINVAL)
		err = errno;
	close(fd);
	return err;
}

/*
 * meta.json from @s through CAPTURE_META.tmp: written, fsync'd, renamed
 * over it.  On any failure meta.json is untouched (the rename is the only
 * step that changes it, and it is atomic) and the temporary file is
 * removed.  The caller fsyncs the directory after the rename (sync_dir()),
 * whose failure must not be taken for one of these.  0 or errno.
 */
static int write_meta_tmp(const char *dir, const char *s, size_t len)
{
	char tmp[4096], dst[4096];
	int fd, err;

	if (meta_path(tmp, sizeof(tmp), dir, CAPTURE_META ".tmp") ||
	    meta_path(dst, sizeof(dst), dir, CAPTURE_META))
		return ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	err = sync_close(fd, write_padded(fd, s, len, 0));
	if (!err && rename(tmp, dst))
		err = errno;
	if (err)
		unlink(tmp);
	return err;
}

/*
 * No space for a new file: fill CAPTURE_META_RESERVE, written when the
 * capture began (capture_begin_meta()), in place, inside the bytes it
 * has, with @s padded to its size; fsync it and rename it over
 * meta.json.  ENOSPC, writing nothing, when @s does not fit.  A failure
 * at any step (a copy-on-write filesystem needs new blocks even to
 * overwrite) leaves meta.json untouched: only the rename changes it.  The
 * caller fsyncs the directory after it.
 */
static int write_meta_reserve(const char *dir, const char *s, size_t len)
{
	char res[4096], dst[4096];
	struct stat st;
	int fd, err;

	if (meta_path(res, sizeof(res), dir, CAPTURE_META_RESERVE) ||
	    meta_path(dst, sizeof(dst), dir, CAPTURE_META))
		return ENAMETOOLONG;
	fd = open(res, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) || (uint64_t)st.st_size < len + 1) {
		close(fd);
		return ENOSPC;
	}
	err = sync_close(fd, write_padded(fd, s, len, (size_t)st.st_size));
	if (!err && rename(res, dst))
		err = errno;
	return err;
}

/* @buf (@size bytes) at its longest as JSON: control bytes, each "\u0001". */
static void worst_string(char *buf, size_t size)
{
	memset(buf, 1, size - 1);
	buf[size - 1] = '\0';
}

/* The errno whose strerror() is the longest JSON string. */
static int worst_errno(void)
{
	size_t best = 0;
	int e, worst = EIO;

	for (e = 1; e < 4096; e++) {
		struct json_object *o = json_object_new_string(strerror(e));
		size_t n = o ? strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) : 0;

		json_object_put(o);
		if (n > best) {
			best = n;
			worst = e;
		}
	}
	return worst;
}

/* Every byte 0x80: an unsigned field of any width at its longest in decimal. */
#define WORST_U64	0x8080808080808080ull

size_t capture_meta_reserve(const struct capture *c, size_t nr_traces)
{
	/*
	 * What is known when the capture begins (the caps, the config, the
	 * command's arguments, the -p threads, the kernel) as it is; what the
	 * recording may still set at its worst: every string it fills in at
	 * its longest and each byte escaped as \u00XX (json-c escapes '/'
	 * too, and a reason may quote argv[0]), every number at its widest
	 * (u64() writes them as int64: 0x80... is 20 characters), every
	 * boolean false, "loss" "overwritten", every nullable field set,
	 * @nr_traces traces with their gaps counted but not itemised (what
	 * capture_write_meta() falls back to), the sideband's per-CPU entries
	 * for every CPU it may open and all its vDSO images.  Serialised by
	 * json-c itself, indented, for each of the alternatives that exclude
	 * each other (time conversion or why not; perf per-CPU entries or why
	 * not), the longest of them, plus 128 bytes for the "stream" totals,
	 * which the worst copy's sums may wrap.
	 */
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int nr_cpus = c->caps.nr_cpus, i;
	struct capture w = *c;
	struct capture_trace *tr;
	struct iptcap_sb_cpu_stats *cpus;
	size_t n, worst = 0;
	int e = worst_errno(), v;

	if (conf > 0 && (unsigned long)conf > nr_cpus)
		nr_cpus = (unsigned int)conf;
	if (c->sb.nr_cpus > nr_cpus)
		nr_cpus = c->sb.nr_cpus;
	tr = calloc(nr_traces ? nr_traces : 1, sizeof(*tr));
	cpus = calloc(nr_cpus ? nr_cpus : 1, sizeof(*cpus));
	if (!tr || !cpus) {
		free(tr);
		free(cpus);
		return 0;	/* no reserve: a full disk keeps the first meta.json */
	}
	w.complete = false;
	worst_string(w.reason, sizeof(w.reason));
	w.time_shift = UINT16_MAX;
	w.time_mult = UINT32_MAX;
	w.time_zero = WORST_U64;
	worst_string(w.time_conv_skipped, sizeof(w.time_conv_skipped));
	w.start_ns = WORST_U64;
	w.stop_ns = WORST_U64;
	w.prog.pid = INT32_MAX;
	w.prog.exited = true;
	w.prog.status = INT32_MIN;
	w.prog.signal = INT32_MIN;
	worst_string(w.stream_fallback, sizeof(w.stream_fallback));
	w.stream_bytes = WORST_U64;
	w.stream_secs = -1.7976931348623157e308;
	memset(&w.sb, 0, sizeof(w.sb));
	worst_string(w.sb.perf_skipped, sizeof(w.sb.perf_skipped));
	w.sb.write_errno = e;
	memset(w.sb.counts, 0x80, sizeof(w.sb.counts));
	w.sb.lines = WORST_U64;
	w.sb.lost = WORST_U64;
	memset(&w.sb.snap, 0x80, sizeof(w.sb.snap));
	w.sb.have_snap = true;
	memset(cpus, 0x80, (nr_cpus ? nr_cpus : 1) * sizeof(*cpus));
	w.sb.nr_cpus = nr_cpus;
	w.sb.nr_vdso = CAPTURE_MAX_VDSO;
	for (i = 0; i < CAPTURE_MAX_VDSO; i++) {
		w.sb.vdso[i].size = (size_t)WORST_U64;
		worst_string(w.sb.vdso[i].source, sizeof(w.sb.vdso[i].source));
	}
	for (i = 0; i < nr_traces; i++) {
		memset(&tr[i].ts, 0x80, sizeof(tr[i].ts));
		tr[i].ts.status = 0;	/* booleans false; bytes_lost: "overwritten" */
		tr[i].cpu = UINT32_MAX;
		tr[i].written = WORST_U64;
		tr[i].write_errno = e;
		worst_string(tr[i].file, sizeof(tr[i].file));
		tr[i].gaps_unlisted = WORST_U64;
	}
	w.traces = tr;
	w.nr_traces = nr_traces;
	for (v = 0; v < 4; v++) {
		struct json_object *o;

		w.have_time_conv = v & 1;
		w.sb.cpus = v & 2 ? cpus : NULL;
		o = capture_meta_json(&w);
		n = o ? strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								JSON_C_TO_STRING_SPACED)) : 0;
		json_object_put(o);
		if (!n) {
			worst = 0;	/* out of memory: no reserve */
			break;
		}
		if (n > worst)
			worst = n;
	}
	free(tr);
	free(cpus);
	return worst ? worst + 1 + 128 : 0;	/* + its newline, the wrapped totals */
}

/*
 * The reserve's rewrite when the metadata has outgrown it (a full disk
 * while the consumer fell behind adds a gap at a time, and the reserve
 * was sized without them): the same metadata with every trace's gaps
 * counted ("gaps_unlisted", and the totals of "stream") but not
 * itemised, which capture_meta_reserve() sizes the reserve for; then
 * also without indentation.  0, or the errno of the last try.
 */
static int write_meta_reserve_lean(const struct capture *c)
{
	struct capture lean = *c;
	struct capture_trace *tr = calloc(c->nr_traces, sizeof(*tr));
	struct json_object *o;
	int err = ENOMEM;
	size_t i;

	if (!tr)
		return err;
	for (i = 0; i < c->nr_traces; i++) {
		tr[i] = c->traces[i];
		tr[i].gaps_unlisted += tr[i].nr_gaps;
		tr[i].nr_gaps = 0;
		tr[i].gaps = NULL;
	}
	lean.traces = tr;
	o = capture_meta_json(&lean);
	if (o) {
		const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_SPACED);

		err = write_meta_reserve(c->dir, s, strlen(s));
		if (err == ENOSPC) {	/* and without the indentation */
			s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
			err = write_meta_reserve(c->dir, s, strlen(s));
		}
		json_object_put(o);
	}
	free(tr);
	return err;
}

/* meta.json of @c through its temporary file only; 0 or errno. */
static int write_meta_draft(const struct capture *c)
{
	struct json_object *o = capture_meta_json(c);
	const char *s;
	int err;

	if (!o)
		return ENOMEM;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
	err = write_meta_tmp(c->dir, s, strlen(s));
	json_object_put(o);
	return err ? err : sync_dir(c->dir);
}

int capture_begin_meta(const struct capture *c)
{
	char res[4096];
	int fd, err = 0;

	if (meta_path(res, sizeof(res), c->dir, CAPTURE_META_RESERVE))
		return ENAMETOOLONG;
	if (c->meta_reserve) {
		fd = open(res, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0)
			return errno;
		err = sync_close(fd, write_padded(fd, "", 0, c->meta_reserve));
	}
	if (!err)
		err = write_meta_draft(c);
	if (err)
		unlink(res);
	return err;
}

int capture_write_meta(const struct capture *c)
{
	char res[4096];
	struct json_object *o;
	const char *s;
	size_t len;
	int err;

	if (meta_path(res, sizeof(res), c->dir, CAPTURE_META_RESERVE))
		return ENAMETOOLONG;
	o = capture_meta_json(c);
	if (!o)
		return ENOMEM;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
	len = strlen(s);
	err = write_meta_tmp(c->dir, s, len);
	if ((err == ENOSPC || err == EDQUOT) && !access(res, F_OK)) {
		int e = write_meta_reserve(c->dir, s, len);

		if (e == ENOSPC && c->nr_traces)
			e = write_meta_reserve_lean(c);
		err = e ? err : 0;
	}
	/*
	 * The final write, done or not: the reserve is not needed any more.
	 * Renamed, the rename is made durable; a failure of that fsync leaves
	 * the final meta.json in place and is returned: it must not send the
	 * write to the reserve.
	 */
	unlink(res);
	if (!err)
		err = sync_dir(c->dir);
	json_object_put(o);
	return err;
}

struct json_object *capture_read_meta(const char *dir, char *msg, size_t len)
{
	char path[4096];
	struct json_object *o, *v;

	snprintf(path, sizeof(path), "%s/" CAPTURE_META, dir);
	if (access(path, R_OK)) {
		snprintf(msg, len, "%s: %s (is %s a capture made by 'ipttool record'?)",
			 path, strerror(errno), dir);
		return NULL;
	}
	o = json_object_from_file(path);
	if (!o) {
		snprintf(msg, len, "%s: not valid JSON: %s", path, json_util_get_last_err());
		return NULL;
	}
	if (!json_object_object_get_ex(o, "format", &v) ||
	    strcmp(json_object_get_string(v), CAPTURE_FORMAT_NAME)) {
		snprintf(msg, len, "%s: not an ipt capture (no \"format\": \"%s\")", path,
			 CAPTURE_FORMAT_NAME);
		json_object_put(o);
		return NULL;
	}
	if (!json_object_object_get_ex(o, "format_version", &v) ||
	    json_object_get_int(v) != CAPTURE_FORMAT_VERSION) {
		snprintf(msg, len, "%s: capture format version %d; this ipttool reads version %d",
			 path, v ? json_object_get_int(v) : -1, CAPTURE_FORMAT_VERSION);
		json_object_put(o);
		return NULL;
	}
	return o;
}

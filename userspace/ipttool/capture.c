// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool: the on-disk capture format, version 1 (see
 * Documentation/capture-format.rst): a directory holding one raw cpuN.pt
 * file per traced CPU and meta.json, written with json-c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
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
	struct perf_event_attr attr;
	struct perf_event_mmap_page *pg;
	long psz = sysconf(_SC_PAGESIZE);
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.exclude_kernel = 1;
	fd = (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		snprintf(c->time_conv_skipped, sizeof(c->time_conv_skipped),
			 "perf_event_open of a dummy event failed: %s", strerror(errno));
		return;
	}
	pg = mmap(NULL, (size_t)psz, PROT_READ, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		snprintf(c->time_conv_skipped, sizeof(c->time_conv_skipped),
			 "mmap of the perf event page failed: %s", strerror(errno));
		close(fd);
		return;
	}
	if (!pg->cap_user_time_zero) {
		snprintf(c->time_conv_skipped, sizeof(c->time_conv_skipped),
			 "the kernel offers no TSC conversion (cap_user_time_zero is 0)");
	} else {
		uint32_t seq;

		do {
			seq = __atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE);
			c->time_shift = pg->time_shift;
			c->time_mult = pg->time_mult;
			c->time_zero = pg->time_zero;
		} while (__atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE) != seq || (seq & 1));
		c->have_time_conv = true;
	}
	munmap(pg, (size_t)psz);
	close(fd);
}

int capture_write_trace(struct capture *c, struct capture_trace *tr,
			const void *buf, const struct iptcap_seg *segs, int nr_segs)
{
	char name[4096];
	int fd = -1, err = 0, i;

	if ((size_t)snprintf(name, sizeof(name), "%s/cpu%u.pt", c->dir, tr->cpu) >= sizeof(name))
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
	if (!err && fsync(fd) && errno != EINVAL)
		err = errno;
	if (close(fd) && !err && errno != EINTR)
		err = errno;
out:
	tr->write_errno = err;
	if (err)
		capture_incomplete(c, "writing cpu%u.pt failed after %" PRIu64 " bytes: %s",
				   tr->cpu, tr->written, strerror(err));
	return err;
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
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
	json_object_object_add(o, "mode", json_object_new_string("cpu"));
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
			       json_object_new_string(ic->buffer_flags & IPT_BUFFER_STOP_ON_FULL ?
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
	json_object_object_add(o, "config", cfg);

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
		char name[24];

		snprintf(name, sizeof(name), "cpu%u.pt", tr->cpu);
		json_object_object_add(t, "cpu", u64(tr->cpu));
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
		json_object_object_add(t, "loss", json_object_new_string(loss_name(iptcap_trace_loss(ts))));
		json_object_object_add(t, "write_error", tr->write_errno ?
				       json_object_new_string(strerror(tr->write_errno)) : NULL);
		json_object_array_add(arr, t);
	}
	json_object_object_add(o, "traces", arr);
	return o;
}

/* Write @s padded with spaces to @pad bytes (JSON allows trailing space). */
static int write_padded(int fd, const char *s, size_t len, size_t pad)
{
	char spaces[256];
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

/*
 * No space for a new file: overwrite meta.json in place, inside the blocks
 * it already has (it was written padded to c->meta_reserve bytes).
 */
static int write_meta_in_place(const char *dst, const char *s, size_t len)
{
	struct stat st;
	int fd, err;

	fd = open(dst, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) || (uint64_t)st.st_size < len + 1) {
		close(fd);
		return ENOSPC;
	}
	err = write_padded(fd, s, len, (size_t)st.st_size);
	if (!err && fsync(fd) && errno != EINVAL)
		err = errno;
	if (close(fd) && !err && errno != EINTR)
		err = errno;
	return err;
}

int capture_write_meta(const struct capture *c)
{
	char tmp[4096], dst[4096];
	struct json_object *o;
	const char *s;
	size_t len;
	int fd, err;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/" CAPTURE_META ".tmp", c->dir) >= sizeof(tmp))
		return ENAMETOOLONG;
	snprintf(dst, sizeof(dst), "%s/" CAPTURE_META, c->dir);
	o = capture_meta_json(c);
	if (!o)
		return ENOMEM;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
	len = strlen(s);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = errno;
		goto fallback;
	}
	err = write_padded(fd, s, len, c->meta_reserve);
	if (!err && fsync(fd) && errno != EINVAL)
		err = errno;
	if (close(fd) && !err && errno != EINTR)
		err = errno;
	if (!err && rename(tmp, dst))
		err = errno;
	if (err)
		unlink(tmp);
fallback:
	if ((err == ENOSPC || err == EDQUOT) && !access(dst, F_OK))
		err = write_meta_in_place(dst, s, len) ? err : 0;
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

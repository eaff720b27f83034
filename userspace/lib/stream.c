// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libiptcap: the consumer of a streamed session (IPT_BUFFER_STREAM).
 *
 * Stream positions count bytes since configure; position p lies at buffer
 * offset p % buffer_size, and [released, bytes_captured) of a trace is
 * ready (uapi/linux/ipt.h, struct ipt_trace_state).  A pass copies that
 * range out of the read-only mapping through the callback, hands it back
 * with IPT_IOC_STREAM_RELEASE (which also resumes a paused unit) and then
 * reads the gap records the kernel appended.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iptcap.h"

#define GAPS_BATCH	16

struct stream_trace {
	struct iptcap_stream_trace id;
	const unsigned char *buf;
	size_t len;
	uint64_t released;	/* what we released */
	uint64_t next_gap;	/* index of the next gap to hand out */
	uint64_t gap_bytes;	/* ipt_trace_state.gap_bytes at the last pass */
	bool paused;
};

struct iptcap_stream {
	struct iptcap *ipt;
	const struct iptcap_stream_ops *ops;
	void *user;
	bool per_thread;
	unsigned int nr_cpus;		/* per-CPU: slots to probe */
	unsigned int next_index;	/* per-thread: the next trace to look for */
	struct stream_trace *tr;
	size_t nr, cap;
	int cb_errno;
	struct iptcap_stream_stats st;
};

enum iptcap_err iptcap_stream_open(struct iptcap *ipt, const struct iptcap_stream_ops *ops,
				   void *user, struct iptcap_stream **out)
{
	struct iptcap_stream *s;
	struct ipt_caps caps;
	enum iptcap_err err;

	*out = NULL;
	if (!ops || !ops->data)
		return IPTCAP_ERR_INVALID;
	s = calloc(1, sizeof(*s));
	if (!s)
		return IPTCAP_ERR_NOMEM;
	s->ipt = ipt;
	s->ops = ops;
	s->user = user;
	s->per_thread = iptcap_is_per_thread(ipt);
	if (!s->per_thread) {
		err = iptcap_get_caps(ipt, &caps);
		if (err) {
			free(s);
			return err;
		}
		s->nr_cpus = caps.nr_cpus;
	}
	*out = s;
	return IPTCAP_OK;
}

void iptcap_stream_close(struct iptcap_stream *s)
{
	if (!s)
		return;
	free(s->tr);
	free(s);
}

int iptcap_stream_wait(struct iptcap_stream *s, int timeout_ms)
{
	struct pollfd p = { .fd = iptcap_fd(s->ipt), .events = POLLIN };
	int n = poll(&p, 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -1;
	if (n && (p.revents & (POLLERR | POLLNVAL)))
		return -1;
	return n > 0;
}

static struct stream_trace *add_trace(struct iptcap_stream *s, unsigned int trace,
				      const struct ipt_trace_state *ts)
{
	struct stream_trace *t;

	if (s->nr == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;

		t = realloc(s->tr, cap * sizeof(*t));
		if (!t)
			return NULL;
		s->tr = t;
		s->cap = cap;
	}
	t = &s->tr[s->nr++];
	memset(t, 0, sizeof(*t));
	t->id.trace = trace;
	t->id.cpu = s->per_thread ? IPT_TRACE_NONE : trace;
	t->id.tid = s->per_thread ? ts->tid : 0;
	t->released = ts->released;
	s->st.traces = (unsigned int)s->nr;
	return t;
}

/* Find traces not seen yet: per-CPU once, per-thread as they are handed out. */
static enum iptcap_err discover(struct iptcap_stream *s)
{
	struct ipt_trace_state ts;
	enum iptcap_err err;

	if (!s->per_thread) {
		unsigned int cpu;

		if (s->nr || !s->nr_cpus)
			return IPTCAP_OK;
		for (cpu = 0; cpu < s->nr_cpus; cpu++) {
			err = iptcap_trace_state(s->ipt, cpu, &ts);
			if (err == IPTCAP_ERR_NO_SUCH_CPU)
				continue;
			if (err)
				return err;
			if (!add_trace(s, cpu, &ts))
				return IPTCAP_ERR_NOMEM;
		}
		s->nr_cpus = 0;	/* done */
		return IPTCAP_OK;
	}
	for (;;) {
		err = iptcap_trace_state(s->ipt, s->next_index, &ts);
		if (err == IPTCAP_ERR_NO_SUCH_TRACE)
			return IPTCAP_OK;
		if (err)
			return err;
		if (!add_trace(s, s->next_index, &ts))
			return IPTCAP_ERR_NOMEM;
		s->next_index++;
	}
}

static enum iptcap_err cb_failed(struct iptcap_stream *s, int e)
{
	s->cb_errno = e > 0 ? e : EIO;
	return iptcap_err_from_errno(s->cb_errno) == IPTCAP_ERR_NO_SPACE ?
	       IPTCAP_ERR_NO_SPACE : IPTCAP_ERR_IO;
}

/* Hand out the gaps of @t from t->next_gap; open ones only when @final. */
static enum iptcap_err pass_gaps(struct iptcap_stream *s, struct stream_trace *t, bool final)
{
	struct ipt_gap g[GAPS_BATCH];
	uint64_t total, oldest;
	unsigned int got, i;
	enum iptcap_err err;
	int rc;

	for (;;) {
		err = iptcap_get_gaps(s->ipt, t->id.trace, t->next_gap, NULL, 0, &got, &total,
				      &oldest);
		if (err)
			return err;
		if (oldest > t->next_gap) {
			uint64_t n = oldest - t->next_gap;

			/* Count them first: a failing callback sees them again. */
			if (s->ops->unlisted) {
				rc = s->ops->unlisted(&t->id, n, s->user);
				if (rc)
					return cb_failed(s, rc);
			}
			s->st.gaps_unlisted += n;
			t->next_gap = oldest;
		}
		if (t->next_gap >= total)
			return IPTCAP_OK;
		err = iptcap_get_gaps(s->ipt, t->id.trace, t->next_gap, g, GAPS_BATCH, &got,
				      &total, &oldest);
		if (err)
			return err;
		if (oldest > t->next_gap)
			continue;	/* overtaken meanwhile: count those first */
		if (!got)
			return IPTCAP_ERR_ABI;	/* total says there is one */
		for (i = 0; i < got; i++) {
			if (!g[i].tsc_end && !final)
				return IPTCAP_OK;	/* still paused: later */
			if (s->ops->gap) {
				rc = s->ops->gap(&t->id, &g[i], s->user);
				if (rc)
					return cb_failed(s, rc);
			}
			s->st.gaps++;
			if (g[i].bytes_lost == IPT_GAP_BYTES_UNKNOWN)
				s->st.gaps_unknown++;
			t->next_gap++;
		}
	}
}

static enum iptcap_err pass_trace(struct iptcap_stream *s, struct stream_trace *t, bool final)
{
	struct ipt_trace_state ts;
	enum iptcap_err err;
	uint64_t head, pos;
	int rc;

	err = iptcap_trace_state(s->ipt, t->id.trace, &ts);
	if (err)
		return err;
	if (!(ts.status & IPT_TS_STREAM))
		return IPTCAP_ERR_STATE;
	head = ts.bytes_captured;
	pos = t->released;
	if (head < pos || head - pos > ts.buffer_size || !ts.buffer_size)
		return IPTCAP_ERR_ABI;
	if (s->per_thread && ts.tid)
		t->id.tid = ts.tid;
	if (head > pos && !t->buf) {
		const void *buf;
		size_t len;

		err = iptcap_map(s->ipt, t->id.trace, &buf, &len);
		if (err)
			return err;
		if (len != ts.buffer_size)
			return IPTCAP_ERR_ABI;
		t->buf = buf;
		t->len = len;
	}
	while (pos < head) {
		uint64_t off = pos % t->len, n = head - pos;

		if (n > t->len - off)
			n = t->len - off;	/* to the end of the buffer: wraps */
		rc = s->ops->data(&t->id, pos, t->buf + off, (size_t)n, s->user);
		if (rc) {
			/* Release what was handed out, not the rest. */
			if (pos > t->released && !iptcap_stream_release(s->ipt, t->id.trace, pos))
				t->released = pos;
			return cb_failed(s, rc);
		}
		s->st.bytes += n;
		pos += n;
	}
	if (pos > t->released) {
		err = iptcap_stream_release(s->ipt, t->id.trace, pos);
		if (err)
			return err;
		t->released = pos;
	}
	s->st.gap_bytes += ts.gap_bytes - t->gap_bytes;
	t->gap_bytes = ts.gap_bytes;
	t->paused = ts.status & IPT_TS_PAUSED;
	/* A release of a paused trace resumes it and closes its gap: look again. */
	if (ts.nr_gaps > t->next_gap || t->paused || final)
		return pass_gaps(s, t, final);
	return IPTCAP_OK;
}

static enum iptcap_err pass(struct iptcap_stream *s, bool final)
{
	enum iptcap_err err;
	unsigned int paused = 0;
	size_t i;

	err = discover(s);
	if (err)
		return err;
	for (i = 0; i < s->nr; i++) {
		err = pass_trace(s, &s->tr[i], final);
		if (err)
			return err;
		paused += s->tr[i].paused;
	}
	s->st.paused = paused;
	return IPTCAP_OK;
}

enum iptcap_err iptcap_stream_drain(struct iptcap_stream *s)
{
	return pass(s, false);
}

enum iptcap_err iptcap_stream_finish(struct iptcap_stream *s)
{
	return pass(s, true);
}

int iptcap_stream_errno(const struct iptcap_stream *s)
{
	return s->cb_errno;
}

void iptcap_stream_stats(const struct iptcap_stream *s, struct iptcap_stream_stats *st)
{
	*st = s->st;
}

/* ---- the default sink: a file per trace --------------------------------- */

struct stream_file {
	unsigned int trace;
	uint32_t tid;
	int fd;
	uint64_t written;
	int write_errno;
	char name[48];
};

struct iptcap_stream_files {
	int dirfd;
	struct stream_file *f;
	size_t nr, cap;
};

enum iptcap_err iptcap_stream_files_open(const char *dir, struct iptcap_stream_files **out)
{
	struct iptcap_stream_files *f;
	int e;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return IPTCAP_ERR_NOMEM;
	f->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->dirfd < 0) {
		e = errno;
		free(f);
		return iptcap_err_from_errno(e);
	}
	*out = f;
	return IPTCAP_OK;
}

/*
 * The one naming rule of a capture's trace files: "cpuN.pt" per CPU;
 * per thread "thread-TID.pt" for the first of a thread's traces that gets a
 * file, "thread-TID.TRACE.pt" for its later ones (TRACE, the trace index,
 * is unique in the session).  A file is created with O_EXCL: an existing
 * file is never truncated; a thread's first name being taken (by a file
 * not of this sink) falls back to the unique one.
 */
static int open_trace_file(struct iptcap_stream_files *f, struct stream_file *sf,
			   const struct iptcap_stream_trace *tr, bool again)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;

	if (tr->cpu != IPT_TRACE_NONE) {
		snprintf(sf->name, sizeof(sf->name), "cpu%u.pt", tr->trace);
	} else if (!again) {
		snprintf(sf->name, sizeof(sf->name), "thread-%u.pt", tr->tid);
		sf->fd = openat(f->dirfd, sf->name, flags, 0644);
		if (sf->fd >= 0 || errno != EEXIST)
			return sf->fd;
		snprintf(sf->name, sizeof(sf->name), "thread-%u.%u.pt", tr->tid, tr->trace);
	} else {
		snprintf(sf->name, sizeof(sf->name), "thread-%u.%u.pt", tr->tid, tr->trace);
	}
	sf->fd = openat(f->dirfd, sf->name, flags, 0644);
	return sf->fd;
}

static struct stream_file *file_of(struct iptcap_stream_files *f,
				   const struct iptcap_stream_trace *tr)
{
	struct stream_file *sf;
	bool again = false;
	size_t i;

	for (i = 0; i < f->nr; i++) {
		if (f->f[i].trace == tr->trace)
			return &f->f[i];
		if (tr->cpu == IPT_TRACE_NONE && f->f[i].tid == tr->tid)
			again = true;
	}
	if (f->nr == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 8;

		sf = realloc(f->f, cap * sizeof(*sf));
		if (!sf)
			return NULL;
		f->f = sf;
		f->cap = cap;
	}
	sf = &f->f[f->nr];
	memset(sf, 0, sizeof(*sf));
	sf->trace = tr->trace;
	sf->tid = tr->tid;
	if (open_trace_file(f, sf, tr, again) < 0)
		return NULL;
	f->nr++;
	return sf;
}

enum iptcap_err iptcap_stream_files_touch(struct iptcap_stream_files *f,
					  const struct iptcap_stream_trace *tr)
{
	errno = 0;
	if (!file_of(f, tr))
		return iptcap_err_from_errno(errno ? errno : ENOMEM);
	return IPTCAP_OK;
}

int iptcap_stream_files_sync(struct iptcap_stream_files *f)
{
	int e = 0;
	size_t i;

	for (i = 0; i < f->nr; i++) {
		struct stream_file *sf = &f->f[i];

		if (sf->fd < 0)
			continue;
		/* EINVAL: a file that cannot be synced (not on a disk) */
		if (fsync(sf->fd) && errno != EINVAL && !sf->write_errno)
			sf->write_errno = errno;
		if (close(sf->fd) && errno != EINTR && !sf->write_errno)
			sf->write_errno = errno;
		sf->fd = -1;
		if (!e)
			e = sf->write_errno;
	}
	if (fsync(f->dirfd) && errno != EINVAL && !e)
		e = errno;
	return e;
}

int iptcap_stream_files_data(const struct iptcap_stream_trace *tr, uint64_t offset,
			     const void *data, size_t len, void *user)
{
	struct iptcap_stream_files *f = user;
	struct stream_file *sf = file_of(f, tr);
	size_t done = 0;

	if (!sf)
		return errno ? errno : ENOMEM;
	if (sf->write_errno)
		return sf->write_errno;
	if (sf->fd < 0)		/* synced and closed: the recording is over */
		return EBADF;
	while (done < len) {
		ssize_t n = pwrite(sf->fd, (const char *)data + done, len - done,
				   (off_t)(offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sf->write_errno = n < 0 ? errno : EIO;
			return sf->write_errno;
		}
		done += (size_t)n;
		sf->written += (uint64_t)n;
	}
	return 0;
}

const char *iptcap_stream_files_get(const struct iptcap_stream_files *f, unsigned int trace,
				    uint64_t *written, int *write_errno)
{
	size_t i;

	for (i = 0; i < f->nr; i++)
		if (f->f[i].trace == trace) {
			if (written)
				*written = f->f[i].written;
			if (write_errno)
				*write_errno = f->f[i].write_errno;
			return f->f[i].name;
		}
	if (written)
		*written = 0;
	if (write_errno)
		*write_errno = 0;
	return NULL;
}

int iptcap_stream_files_close(struct iptcap_stream_files *f)
{
	int e = 0;
	size_t i;

	if (!f)
		return 0;
	for (i = 0; i < f->nr; i++) {
		if (!e && f->f[i].write_errno)
			e = f->f[i].write_errno;
		if (f->f[i].fd >= 0 && close(f->f[i].fd) && errno != EINTR && !e)
			e = errno;
	}
	close(f->dirfd);
	free(f->f);
	free(f);
	return e;
}

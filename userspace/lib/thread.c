// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libiptcap: a tracer per thread, in the shape of DynamoRIO's drpttracer
 * (create a handle on the thread, start, stop into an output holding the
 * PT bytes, the sideband and the metadata).
 *
 * All handles of a process share one per-thread session (other processes
 * have their own; a thread is in one session at most).  Start attaches
 * the calling thread to a fresh trace of that session (the session
 * traces all the time; only attached threads are traced), stop detaches
 * it, which makes the trace final, and copies it out.  Traces are never
 * reused within a session, so when they are used up and no handle is
 * tracing, the session is configured anew.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "iptcap.h"

/**
 * struct thread_session - the process-wide per-thread session
 * @lock: protects everything here
 * @ipt: the open device with the session, or NULL
 * @cfg: its configuration (from the first handle)
 * @device: the device path it was opened with
 * @caps: the unit's capabilities
 * @users: handles alive
 * @tracing: handles between start and stop
 */
static struct thread_session {
	pthread_mutex_t lock;
	struct iptcap *ipt;
	struct iptcap_config cfg;
	char device[256];
	struct ipt_caps caps;
	unsigned int users;
	unsigned int tracing;
} session = { .lock = PTHREAD_MUTEX_INITIALIZER };

/**
 * struct iptcap_thread - a tracer of one thread
 * @tid: the thread that created the handle
 * @trace: its trace while @active
 * @active: between start and stop
 * @sb: the thread's perf sideband event, or NULL (@sb_skipped says why)
 */
struct iptcap_thread {
	uint32_t tid;
	unsigned int trace;
	bool active;
	struct iptcap_sb *sb;
	char sb_skipped[160];
};

static uint32_t my_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Configure and start the session on session.ipt; called locked. */
static enum iptcap_err session_setup(void)
{
	enum iptcap_err err;

	err = iptcap_configure(session.ipt, &session.cfg, NULL, 0);
	if (err)
		return err;
	err = iptcap_start(session.ipt);
	if (err)
		iptcap_release(session.ipt);
	return err;
}

static void session_teardown(void)
{
	iptcap_stop(session.ipt);
	iptcap_release(session.ipt);
	iptcap_close(session.ipt);
	session.ipt = NULL;
}

enum iptcap_err iptcap_thread_create(const struct iptcap_thread_opts *opts,
				     struct iptcap_thread **out)
{
	static const struct iptcap_thread_opts defaults;
	const struct iptcap_thread_opts *o = opts ? opts : &defaults;
	struct iptcap_sb_opts so;
	struct iptcap_thread *th;
	enum iptcap_err err = IPTCAP_OK;

	*out = NULL;
	if (o->buffer_size % 4096 || o->max_threads > IPT_MAX_THREADS ||
	    (o->device && strlen(o->device) >= sizeof(session.device)))
		return IPTCAP_ERR_INVALID;
	th = calloc(1, sizeof(*th));
	if (!th)
		return IPTCAP_ERR_NOMEM;
	th->tid = my_tid();

	pthread_mutex_lock(&session.lock);
	if (!session.ipt) {
		err = iptcap_open(o->device, &session.ipt);
		if (!err)
			err = iptcap_get_caps(session.ipt, &session.caps);
		if (!err) {
			iptcap_config_init(&session.cfg);
			session.cfg.per_thread = true;
			session.cfg.max_threads = o->max_threads ? o->max_threads :
						  IPTCAP_THREAD_DEFAULT_MAX;
			session.cfg.buffer_size = o->buffer_size;
			session.cfg.stop_on_full = o->stop_on_full;
			session.cfg.user = true;
			session.cfg.kernel = o->kernel;
			session.cfg.tsc = o->tsc;
			snprintf(session.device, sizeof(session.device), "%s",
				 o->device ? o->device : IPT_DEVICE_PATH);
			err = session_setup();
		}
		if (err && session.ipt) {
			iptcap_close(session.ipt);
			session.ipt = NULL;
		}
	}
	if (!err)
		session.users++;
	pthread_mutex_unlock(&session.lock);
	if (err) {
		free(th);
		return err;
	}

	if (o->no_sideband) {
		snprintf(th->sb_skipped, sizeof(th->sb_skipped), "disabled (no_sideband)");
	} else {
		memset(&so, 0, sizeof(so));
		so.tid = th->tid;
		so.data_pages = 64;
		if (iptcap_sb_open(&so, &th->sb, th->sb_skipped, sizeof(th->sb_skipped)))
			th->sb = NULL;
	}
	*out = th;
	return IPTCAP_OK;
}

static int discard(const struct iptcap_sb_rec *r, void *arg)
{
	(void)r;
	(void)arg;
	return 0;
}

enum iptcap_err iptcap_thread_start(struct iptcap_thread *th)
{
	enum iptcap_err err;

	if (th->active || th->tid != my_tid())
		return IPTCAP_ERR_STATE;
	if (th->sb) {
		/* Drop what an earlier interval left, then record this one. */
		iptcap_sb_read(th->sb, discard, NULL);
		iptcap_sb_enable(th->sb);
	}
	pthread_mutex_lock(&session.lock);
	err = iptcap_attach(session.ipt, 0, 0, &th->trace);
	if (err == IPTCAP_ERR_NO_FREE_TRACE && !session.tracing) {
		/* Every trace was handed out: a new session has fresh ones. */
		iptcap_stop(session.ipt);
		err = iptcap_release(session.ipt);
		if (!err)
			err = session_setup();
		if (!err)
			err = iptcap_attach(session.ipt, 0, 0, &th->trace);
	}
	if (!err) {
		session.tracing++;
		th->active = true;
	}
	pthread_mutex_unlock(&session.lock);
	if (err && th->sb)
		iptcap_sb_disable(th->sb);
	return err;
}

static int grow(void **buf, size_t *cap, size_t need)
{
	void *p;

	if (need <= *cap)
		return 0;
	p = realloc(*buf, need);
	if (!p)
		return -1;
	*buf = p;
	*cap = need;
	return 0;
}

static int sb_append(const struct iptcap_sb_rec *r, void *arg)
{
	struct iptcap_output *out = arg;

	if (r->type == IPTCAP_SB_LOST)
		out->sideband_lost += r->lost;
	if (grow(&out->sideband, &out->sideband_cap, out->sideband_size + r->raw_len)) {
		if (!out->sideband_skipped[0])
			snprintf(out->sideband_skipped, sizeof(out->sideband_skipped),
				 "out of memory: sideband truncated");
		return 0;
	}
	memcpy((char *)out->sideband + out->sideband_size, r->raw, r->raw_len);
	out->sideband_size += r->raw_len;
	return 0;
}

enum iptcap_err iptcap_thread_stop(struct iptcap_thread *th, struct iptcap_output *out)
{
	struct ipt_trace_state ts;
	struct iptcap_time_conv tc;
	enum iptcap_err err;
	const void *buf;
	size_t blen, copied;

	if (!th->active)
		return IPTCAP_ERR_STATE;
	pthread_mutex_lock(&session.lock);
	err = iptcap_detach(session.ipt, th->trace);
	/* A thread that is gone has a final trace too. */
	if (err == IPTCAP_ERR_NO_SUCH_THREAD)
		err = IPTCAP_OK;
	th->active = false;
	session.tracing--;
	if (!err)
		err = iptcap_trace_state(session.ipt, th->trace, &ts);
	if (!err && grow(&out->pt, &out->pt_cap, ts.bytes_valid ? ts.bytes_valid : 1))
		err = IPTCAP_ERR_NOMEM;
	out->pt_size = 0;
	if (!err && ts.bytes_valid) {
		err = iptcap_map(session.ipt, th->trace, &buf, &blen);
		if (!err)
			err = iptcap_copy_segments(buf, &ts, out->pt, out->pt_cap, &copied);
		if (!err)
			out->pt_size = copied;
	}
	pthread_mutex_unlock(&session.lock);
	if (err)
		return err;

	out->tid = ts.tid ? ts.tid : th->tid;
	out->loss = iptcap_trace_loss(&ts);
	out->bytes_lost = ts.bytes_lost;
	memset(&out->metadata, 0, sizeof(out->metadata));
	out->metadata.cpu_family = session.caps.family;
	out->metadata.cpu_model = session.caps.model;
	out->metadata.cpu_stepping = session.caps.stepping;
	out->metadata.cpuid_15 = session.caps.cpuid_15;
	out->metadata.nom_freq = session.caps.nom_freq;
	if (!iptcap_read_time_conv(&tc, NULL, 0)) {
		out->metadata.have_time_conv = true;
		out->metadata.time_shift = tc.time_shift;
		out->metadata.time_mult = tc.time_mult;
		out->metadata.time_zero = tc.time_zero;
	}
	out->sideband_size = 0;
	out->sideband_lost = 0;
	out->sideband_skipped[0] = '\0';
	if (th->sb) {
		iptcap_sb_disable(th->sb);
		iptcap_sb_read(th->sb, sb_append, out);
	} else {
		snprintf(out->sideband_skipped, sizeof(out->sideband_skipped), "%s",
			 th->sb_skipped[0] ? th->sb_skipped : "no sideband event");
	}
	return IPTCAP_OK;
}

void iptcap_thread_destroy(struct iptcap_thread *th)
{
	if (!th)
		return;
	pthread_mutex_lock(&session.lock);
	if (th->active) {
		iptcap_detach(session.ipt, th->trace);
		session.tracing--;
	}
	if (!--session.users)
		session_teardown();
	pthread_mutex_unlock(&session.lock);
	iptcap_sb_close(th->sb);
	free(th);
}

void iptcap_output_free(struct iptcap_output *out)
{
	if (!out)
		return;
	free(out->pt);
	free(out->sideband);
	memset(out, 0, sizeof(*out));
}

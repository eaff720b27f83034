// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool: who holds the PT unit - the configured sessions as
 * IPT_IOC_LIST_SESSIONS reports them (all of them for a caller with
 * CAP_PERFMON or CAP_SYS_ADMIN, else the caller's own), for 'ipttool caps'
 * and for the error of a session refused with EBUSY.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ipttool.h"

int holders_get(const char *device, struct ipt_session_info *e,
		unsigned int max, unsigned int *total)
{
	struct ipt_sessions req;
	int fd = open(device, O_RDWR | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	memset(&req, 0, sizeof(req));
	req.size = sizeof(req);
	req.entry_size = sizeof(*e);
	req.nr_entries = max;
	req.entries_ptr = (uintptr_t)e;
	if (ioctl(fd, IPT_IOC_LIST_SESSIONS, &req))
		err = -errno;
	close(fd);
	if (err)
		return err;
	*total = req.total;
	return (int)req.nr_entries;
}

static const char *holder_mode(uint32_t mode)
{
	return mode == IPT_MODE_CPU ? "per-cpu" :
	       mode == IPT_MODE_THREAD ? "per-thread" : "unknown-mode";
}

static const char *holder_state(uint32_t state)
{
	return state == IPT_STATE_CONFIGURED ? "configured" :
	       state == IPT_STATE_TRACING ? "tracing" :
	       state == IPT_STATE_STOPPED ? "stopped" : "unknown-state";
}

void holder_format(const struct ipt_session_info *e, char *buf, size_t len)
{
	char pid[24] = "pid ?";

	if (e->pid)
		snprintf(pid, sizeof(pid), "pid %u", e->pid);
	if (e->mode == IPT_MODE_THREAD)
		snprintf(buf, len, "%s session, %s, uid %u, %s, %u traces (%u threads)%s",
			 holder_mode(e->mode), holder_state(e->state), e->uid, pid,
			 e->nr_traces, e->nr_threads,
			 (e->flags & IPT_SESSION_KERNEL) ? ", kernel" : "");
	else
		snprintf(buf, len, "%s session, %s, uid %u, %s, %u traces%s",
			 holder_mode(e->mode), holder_state(e->state), e->uid, pid,
			 e->nr_traces, (e->flags & IPT_SESSION_KERNEL) ? ", kernel" : "");
}

struct json_object *holders_to_json(const struct ipt_session_info *e, unsigned int n)
{
	struct json_object *a = json_object_new_array();
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "mode", json_object_new_string(holder_mode(e[i].mode)));
		json_object_object_add(o, "state",
				       json_object_new_string(holder_state(e[i].state)));
		json_object_object_add(o, "uid", json_object_new_int64(e[i].uid));
		json_object_object_add(o, "pid", e[i].pid ? json_object_new_int64(e[i].pid) : NULL);
		json_object_object_add(o, "traces", json_object_new_int64(e[i].nr_traces));
		json_object_object_add(o, "threads", json_object_new_int64(e[i].nr_threads));
		json_object_object_add(o, "kernel",
				       json_object_new_boolean(!!(e[i].flags & IPT_SESSION_KERNEL)));
		json_object_array_add(a, o);
	}
	return a;
}

void holders_describe(const char *device, FILE *f)
{
	struct ipt_session_info e;
	unsigned int total = 0;
	char line[160];
	int n = holders_get(device, &e, 1, &total);

	if (n < 0 || !total) {
		fprintf(f, "  Another session or tracer owns Intel PT (another ipttool, "
			"'ipttool start', perf with intel_pt). Stop it and retry.\n");
		return;
	}
	holder_format(&e, line, sizeof(line));
	if (total > 1)
		fprintf(f, "  Held by a %s, and %u more ('ipttool caps' lists them).\n",
			line, total - 1);
	else
		fprintf(f, "  Held by a %s.\n", line);
}

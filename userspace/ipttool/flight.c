// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool start / stop / status / dump: a per-CPU flight recorder.
 *
 * A session lives as long as its /dev/ipt file is open, so 'start'
 * configures and starts the session, then leaves a small daemon holding
 * the file.  The other commands talk to it over a unix socket
 * ($IPTTOOL_RUN_DIR, default /run/ipttool, file ipttool.sock): one
 * request line ("status", "dump DIR", "stop", "stop DIR"), answered by
 * "ok" or "error MESSAGE" on the first line and JSON on the second.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipttool.h"

static const char *run_dir(void)
{
	const char *d = getenv("IPTTOOL_RUN_DIR");

	return d && *d ? d : "/run/ipttool";
}

static int sock_addr(struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/ipttool.sock", run_dir()) >=
	    sizeof(sa->sun_path))
		return -1;
	return 0;
}

static int connect_daemon(void)
{
	struct sockaddr_un sa;
	int fd;

	if (sock_addr(&sa))
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void reply(int fd, const char *status, struct json_object *o)
{
	const char *js = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "null";

	if (!write_full(fd, status, strlen(status), NULL) && !write_full(fd, "\n", 1, NULL) &&
	    !write_full(fd, js, strlen(js), NULL))
		write_full(fd, "\n", 1, NULL);
	if (o)
		json_object_put(o);
}

/*
 * Stop, write the capture into @dir, then trace on (@restart) or free
 * the session before answering, so that PT is free when 'stop' returns.
 */
static void do_dump(int cfd, struct iptcap *ipt, struct capture *c, char *dir, bool restart)
{
	char msg[512], status[600];
	enum iptcap_err err;
	int rc;

	if (capture_prepare_dir(dir, msg, sizeof(msg))) {
		snprintf(status, sizeof(status), "error %s", msg);
		reply(cfd, status, NULL);
		return;
	}
	c->dir = dir;
	c->nr_traces = 0;
	c->complete = false;
	snprintf(c->reason, sizeof(c->reason), "the dump did not finish");
	rc = capture_begin_meta(c);
	if (rc) {
		snprintf(status, sizeof(status), "error cannot write %s/%s: %s", dir, CAPTURE_META,
			 strerror(rc));
		reply(cfd, status, NULL);
		return;
	}
	c->complete = true;
	c->reason[0] = '\0';
	err = iptcap_stop(ipt);
	c->stop_ns = realtime_ns();
	if (err)
		capture_incomplete(c, "stopping the trace failed: %s", iptcap_strerror(err));
	/* The processes as the trace ends: a /proc snapshot, no perf events. */
	memset(&c->sb, 0, sizeof(c->sb));
	snprintf(c->sb.perf_skipped, sizeof(c->sb.perf_skipped),
		 "a flight-recorder dump has no perf events; its snapshot is of the dump's time");
	if (capture_sb_begin(c, false, msg, sizeof(msg)))
		capture_incomplete(c, "%s", msg);
	capture_sb_end(c);
	capture_collect(ipt, c);
	capture_sb_free(c);
	if (restart) {
		err = iptcap_start(ipt);
		if (err)
			capture_incomplete(c, "restarting the trace failed: %s", iptcap_strerror(err));
	} else {
		iptcap_release(ipt);
	}
	if (c->complete) {
		reply(cfd, "ok", capture_meta_json(c));
	} else {
		snprintf(status, sizeof(status), "error %s", c->reason);
		reply(cfd, status, capture_meta_json(c));
	}
}

static void status_reply(int cfd, struct iptcap *ipt, struct capture *c)
{
	struct json_object *o, *arr = json_object_new_array();
	unsigned int cpu;

	o = json_object_new_object();
	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	json_object_object_add(o, "start_ns", json_object_new_int64((int64_t)c->start_ns));
	json_object_object_add(o, "buffer_size", json_object_new_int64((int64_t)c->config.buffer_size));
	json_object_object_add(o, "buffer", json_object_new_string(
		c->config.buffer_flags & IPT_BUFFER_STOP_ON_FULL ? "stop-on-full" : "ring"));
	for (cpu = 0; cpu < c->caps.nr_cpus; cpu++) {
		struct ipt_trace_state ts;
		struct json_object *t;

		if (iptcap_trace_state(ipt, cpu, &ts))
			continue;
		t = json_object_new_object();
		json_object_object_add(t, "cpu", json_object_new_int((int)cpu));
		json_object_object_add(t, "running", json_object_new_boolean(ts.status & IPT_TS_RUNNING));
		json_object_object_add(t, "stopped_full", json_object_new_boolean(ts.status & IPT_TS_FULL));
		json_object_object_add(t, "hw_error", json_object_new_boolean(ts.status & IPT_TS_ERROR));
		json_object_array_add(arr, t);
	}
	json_object_object_add(o, "traces", arr);
	reply(cfd, "ok", o);
}

static volatile sig_atomic_t daemon_stop;

static void on_term(int sig)
{
	daemon_stop = sig;
}

static void serve(int lfd, struct iptcap *ipt, struct capture *c, const char *sock)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	while (!daemon_stop) {
		struct timeval tmo = { .tv_sec = 5 };
		char line[PATH_MAX + 16];
		ssize_t n, got = 0;
		int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (cfd < 0)
			continue;
		/* A client that sends nothing must not block the recorder. */
		setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
		while (got < (ssize_t)sizeof(line) - 1 &&
		       (n = read(cfd, line + got, sizeof(line) - 1 - (size_t)got)) > 0) {
			got += n;
			if (memchr(line, '\n', (size_t)got))
				break;
		}
		line[got > 0 ? got : 0] = '\0';
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "status")) {
			status_reply(cfd, ipt, c);
		} else if (!strncmp(line, "dump /", 6)) {
			do_dump(cfd, ipt, c, line + 5, true);
		} else if (!strcmp(line, "stop")) {
			iptcap_stop(ipt);
			iptcap_release(ipt);
			reply(cfd, "ok", NULL);
			daemon_stop = SIGTERM;
		} else if (!strncmp(line, "stop /", 6)) {
			do_dump(cfd, ipt, c, line + 5, false);
			daemon_stop = SIGTERM;
		} else {
			reply(cfd, "error unknown request", NULL);
		}
		close(cfd);
	}
	unlink(sock);
	iptcap_close(ipt);
}

int cmd_start(struct ipttool *t, int argc, char **argv)
{
	struct record_opts o;
	struct capture c;
	struct sockaddr_un sa;
	struct iptcap *ipt = NULL;
	enum iptcap_err err;
	char msg[512];
	int lfd = -1, devnull, rc;
	pid_t pid;

	rc = record_parse(argc, argv, &o, msg, sizeof(msg));
	if (!rc && (o.prog_argv || o.duration > 0)) {
		snprintf(msg, sizeof(msg), "start takes no command and no --duration: it traces "
			 "until 'ipttool stop'");
		rc = 2;
	} else if (!rc && o.cfg.nr_regions) {
		snprintf(msg, sizeof(msg), "--regions: the flight recorder keeps a ring, it does "
			 "not stream");
		rc = 2;
	} else if (!rc && o.cfg.per_thread) {
		snprintf(msg, sizeof(msg), "the flight recorder traces CPUs: give -a or -C CPUS "
			 "(threads are recorded with 'ipttool record -p TID')");
		rc = 2;
	}
	if (rc) {
		ipt_err("start: %s", msg);
		return rc;
	}
	o.cfg.stream = false;	/* a flight recorder is a ring (or stop-on-full) */
	if (o.help) {
		printf("Usage: ipttool start {-a | -C CPUS} [record's trace options]\n"
		       "Starts a flight recorder; see ipttool-start(8).\n");
		return 0;
	}
	rc = connect_daemon();
	if (rc >= 0) {
		close(rc);
		ipt_err("start: a flight recorder is already running: 'ipttool status', "
			"'ipttool stop'");
		return 1;
	}
	memset(&c, 0, sizeof(c));
	err = iptcap_open(t->device, &ipt);
	if (err) {
		ipt_err_open(t, err);
		return 1;
	}
	err = iptcap_get_caps(ipt, &c.caps);
	if (!err)
		err = check_config(&o.cfg, &c.caps, &c.config, msg, sizeof(msg));
	if (!err)
		err = iptcap_configure(ipt, &o.cfg, msg, sizeof(msg));
	if (err) {
		err_session(t, err, "start", msg);
		iptcap_close(ipt);
		return err == IPTCAP_ERR_INVALID ? 2 : 1;
	}
	c.traces = calloc(c.caps.nr_cpus ? c.caps.nr_cpus : 1, sizeof(*c.traces));
	if (!c.traces || sock_addr(&sa) || (mkdir(run_dir(), 0700) && errno != EEXIST)) {
		ipt_err("start: cannot create %s: %s", run_dir(), strerror(errno));
		goto fail;
	}
	unlink(sa.sun_path);	/* stale: nobody answered on it */
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 4)) {
		ipt_err("start: socket %s: %s", sa.sun_path, strerror(errno));
		goto fail;
	}
	capture_time_conv(&c);
	c.start_ns = realtime_ns();
	c.meta_reserve = capture_meta_reserve(&c, c.caps.nr_cpus);
	err = iptcap_start(ipt);
	if (err) {
		err_session(t, err, "start", NULL);
		goto fail_unlink;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		ipt_err("start: fork: %s", strerror(errno));
		goto fail_unlink;
	}
	if (pid > 0) {
		/* The daemon holds the session; this file reference can go. */
		if (t->json) {
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "pid", json_object_new_int(pid));
			json_object_object_add(j, "socket", json_object_new_string(sa.sun_path));
			ipt_print_json(t, j);
		} else {
			printf("flight recorder started (pid %d); 'ipttool dump -o DIR' saves "
			       "the trace, 'ipttool stop' ends it\n", (int)pid);
		}
		/* The daemon's copy of the file keeps the session. */
		close(lfd);
		free(c.traces);
		iptcap_close(ipt);
		return 0;
	}
	setsid();
	if (chdir("/"))
		_exit(1);
	devnull = open("/dev/null", O_RDWR);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		close(devnull);
	}
	serve(lfd, ipt, &c, sa.sun_path);
	_exit(0);
fail_unlink:
	unlink(sa.sun_path);
fail:
	if (lfd >= 0)
		close(lfd);
	free(c.traces);
	iptcap_close(ipt);
	return 1;
}

/* Send @req, print the answer; the exit status of the command. */
static int request(const struct ipttool *t, const char *cmd, const char *req)
{
	char buf[1 << 16];
	ssize_t n, got = 0;
	char *nl;
	int fd = connect_daemon();

	if (fd < 0) {
		ipt_err("%s: no flight recorder is running (start one with 'ipttool start -a')",
			cmd);
		return 1;
	}
	if (write_full(fd, req, strlen(req), NULL) || write_full(fd, "\n", 1, NULL)) {
		ipt_err("%s: cannot talk to the flight recorder: %s", cmd, strerror(errno));
		close(fd);
		return 1;
	}
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got > 0 ? got : 0] = '\0';
	nl = strchr(buf, '\n');
	if (!nl) {
		ipt_err("%s: the flight recorder did not answer", cmd);
		return 1;
	}
	*nl = '\0';
	if (t->json) {
		struct json_object *o = json_tokener_parse(nl + 1);

		if (o)
			ipt_print_json(t, o);
	} else if (!strcmp(cmd, "status")) {
		struct json_object *o = json_tokener_parse(nl + 1), *v, *arr;
		size_t i;

		if (o && json_object_object_get_ex(o, "traces", &arr)) {
			json_object_object_get_ex(o, "pid", &v);
			printf("flight recorder: pid %d, ", json_object_get_int(v));
			json_object_object_get_ex(o, "buffer", &v);
			printf("%s buffer of ", json_object_get_string(v));
			json_object_object_get_ex(o, "buffer_size", &v);
			printf("%lld bytes per CPU\n", (long long)json_object_get_int64(v));
			for (i = 0; i < json_object_array_length(arr); i++) {
				struct json_object *tr = json_object_array_get_idx(arr, i), *r, *f;

				json_object_object_get_ex(tr, "cpu", &v);
				json_object_object_get_ex(tr, "running", &r);
				json_object_object_get_ex(tr, "stopped_full", &f);
				printf("cpu%d: %s%s\n", json_object_get_int(v),
				       json_object_get_boolean(r) ? "tracing" : "stopped",
				       json_object_get_boolean(f) ? " (buffer full)" : "");
			}
		}
		json_object_put(o);
	}
	if (strcmp(buf, "ok")) {
		ipt_err("%s: %s", cmd, !strncmp(buf, "error ", 6) ? buf + 6 : buf);
		return 1;
	}
	return 0;
}

/* "CMD --help" / "CMD -h": true after printing @usage to stdout. */
static bool want_help(int argc, char **argv, const char *usage)
{
	if (argc != 2 || (strcmp(argv[1], "--help") && strcmp(argv[1], "-h")))
		return false;
	fputs(usage, stdout);
	return true;
}

/* Parse "[-o DIR]" into an absolute path in @abs; 0, or 2 after a message. */
static int parse_out(const char *cmd, int argc, char **argv, bool need, char *abs, size_t len)
{
	char cwd[PATH_MAX];

	abs[0] = '\0';
	if (argc == 1 && !need)
		return 0;
	if (argc != 3 || (strcmp(argv[1], "-o") && strcmp(argv[1], "--output")) || !*argv[2]) {
		ipt_err("%s: usage: ipttool %s %s", cmd, cmd, need ? "-o DIR" : "[-o DIR]");
		return 2;
	}
	if (argv[2][0] == '/') {
		snprintf(abs, len, "%s", argv[2]);
	} else if (!getcwd(cwd, sizeof(cwd)) ||
		   (size_t)snprintf(abs, len, "%s/%s", cwd, argv[2]) >= len) {
		ipt_err("%s: path too long", cmd);
		return 2;
	}
	return 0;
}

int cmd_dump(struct ipttool *t, int argc, char **argv)
{
	char dir[PATH_MAX], req[PATH_MAX + 8];
	int rc;

	if (want_help(argc, argv, "Usage: ipttool dump -o DIR\n\nSave the running flight "
		      "recorder's buffers as a capture in DIR. See ipttool-dump(8).\n"))
		return 0;
	rc = parse_out("dump", argc, argv, true, dir, sizeof(dir));
	if (rc)
		return rc;
	snprintf(req, sizeof(req), "dump %s", dir);
	rc = request(t, "dump", req);
	if (!rc && !t->json)
		fprintf(stderr, "ipttool: capture in %s\n", dir);
	return rc;
}

int cmd_stop(struct ipttool *t, int argc, char **argv)
{
	char dir[PATH_MAX], req[PATH_MAX + 8];
	int rc;

	if (want_help(argc, argv, "Usage: ipttool stop [-o DIR]\n\nEnd the flight recorder; "
		      "with -o, save its buffers in DIR first. See ipttool-stop(8).\n"))
		return 0;
	rc = parse_out("stop", argc, argv, false, dir, sizeof(dir));
	if (rc)
		return rc;
	snprintf(req, sizeof(req), dir[0] ? "stop %s" : "stop", dir);
	return request(t, "stop", req);
}

int cmd_status(struct ipttool *t, int argc, char **argv)
{
	if (want_help(argc, argv, "Usage: ipttool status\n\nShow the running flight "
		      "recorder. See ipttool-status(8).\n"))
		return 0;
	if (argc != 1) {
		ipt_err("status: takes no arguments (got '%s')", argv[1]);
		return 2;
	}
	return request(t, "status", "status");
}

// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool info DIR: what a capture holds, checked against its files.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipttool.h"

static int64_t get_i64(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

static bool get_bool(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* Compare each trace's "size" with its file; adds "file_ok" to each. */
static bool check_files(const char *dir, struct json_object *traces)
{
	size_t i, n = json_object_array_length(traces);
	bool ok = true;

	for (i = 0; i < n; i++) {
		struct json_object *tr = json_object_array_get_idx(traces, i);
		const char *file = get_str(tr, "file");
		char path[4096];
		struct stat st;
		int serr = 0;
		bool fok;

		snprintf(path, sizeof(path), "%s/%s", dir, file ? file : "");
		if (file && !strchr(file, '/') && stat(path, &st))
			serr = errno;
		fok = file && !strchr(file, '/') && !serr &&
		      (int64_t)st.st_size == get_i64(tr, "size");
		/* A file that could not even be created has no bytes to check. */
		if (file && serr == ENOENT && get_i64(tr, "size") == 0 && get_str(tr, "write_error"))
			fok = true;
		json_object_object_add(tr, "file_ok", json_object_new_boolean(fok));
		ok = ok && fok;
	}
	return ok;
}

/* Whether the sideband files named in @sb exist; adds "files_ok" to @sb. */
static bool check_sideband(const char *dir, struct json_object *sb)
{
	struct json_object *arr;
	const char *file = get_str(sb, "file");
	char path[4096];
	size_t i;
	bool ok = true;

	if (file) {
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		ok = !strchr(file, '/') && !access(path, R_OK);
	}
	if (json_object_object_get_ex(sb, "vdso", &arr) && json_object_is_type(arr, json_type_array))
		for (i = 0; i < json_object_array_length(arr); i++) {
			struct json_object *v = json_object_array_get_idx(arr, i);
			const char *f = get_str(v, "file");
			struct stat st;

			snprintf(path, sizeof(path), "%s/%s", dir, f ? f : "");
			if (!f || strchr(f, '/') || stat(path, &st) ||
			    (int64_t)st.st_size != get_i64(v, "size"))
				ok = false;
		}
	json_object_object_add(sb, "files_ok", json_object_new_boolean(ok));
	return ok;
}

static void print_sideband(struct json_object *sb)
{
	struct json_object *rec = NULL, *snap = NULL, *arr = NULL;
	size_t i, n;

	if (!sb) {
		printf("sideband:    none (recorded before ipttool had sideband)\n");
		return;
	}
	json_object_object_get_ex(sb, "records", &rec);
	json_object_object_get_ex(sb, "snapshot", &snap);
	if (get_bool(sb, "perf"))
		printf("sideband:    %s: perf records: mmap %" PRId64 ", comm %" PRId64
		       ", fork %" PRId64 ", exit %" PRId64 ", switch %" PRId64 "; %" PRId64
		       " lost%s\n", get_str(sb, "file") ? get_str(sb, "file") : "?",
		       get_i64(rec, "mmap"), get_i64(rec, "comm"), get_i64(rec, "fork"),
		       get_i64(rec, "exit"), get_i64(rec, "switch"), get_i64(sb, "lost_records"),
		       get_bool(sb, "build_ids") ? ", build-ids from the kernel" : "");
	else
		printf("sideband:    %s: no perf records (%s)\n",
		       get_str(sb, "file") ? get_str(sb, "file") : "none",
		       get_str(sb, "perf_skipped") ? get_str(sb, "perf_skipped") : "?");
	if (snap)
		printf("snapshot:    %" PRId64 " processes, %" PRId64 " threads, %" PRId64
		       " executable mappings (%" PRId64 " vanished or unreadable)\n",
		       get_i64(snap, "processes"), get_i64(snap, "threads"), get_i64(snap, "maps"),
		       get_i64(snap, "vanished"));
	if (json_object_object_get_ex(sb, "vdso", &arr) && json_object_is_type(arr, json_type_array) &&
	    (n = json_object_array_length(arr))) {
		printf("vdso:       ");
		for (i = 0; i < n; i++) {
			struct json_object *v = json_object_array_get_idx(arr, i);

			printf(" %s (%" PRId64 " bytes, from %s)", get_str(v, "file") ?
			       get_str(v, "file") : "?", get_i64(v, "size"),
			       get_str(v, "source") ? get_str(v, "source") : "?");
		}
		printf("\n");
	}
	if (get_str(sb, "write_error"))
		printf("sideband:    WRITE ERROR: %s\n", get_str(sb, "write_error"));
	if (!get_bool(sb, "files_ok"))
		printf("sideband:    FILE MISSING: a sideband or vDSO file is missing or its size "
		       "differs\n");
}

/* Per-thread: the command and its outcome, or the threads of -p. */
static void print_program(struct json_object *o)
{
	struct json_object *p, *arr;
	size_t i, n;

	if (!json_object_object_get_ex(o, "program", &p) || !p)
		return;
	if (json_object_object_get_ex(p, "argv", &arr) && arr &&
	    json_object_is_type(arr, json_type_array)) {
		printf("program:    ");
		n = json_object_array_length(arr);
		for (i = 0; i < n; i++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(arr, i)));
		if (get_str(p, "exit_status"))
			printf(" (pid %" PRId64 ", exit status %" PRId64 ")\n", get_i64(p, "pid"),
			       get_i64(p, "exit_status"));
		else if (get_str(p, "signal"))
			printf(" (pid %" PRId64 ", killed by signal %" PRId64 ")\n",
			       get_i64(p, "pid"), get_i64(p, "signal"));
		else
			printf(" (pid %" PRId64 ", still running when recording stopped)\n",
			       get_i64(p, "pid"));
	}
	if (json_object_object_get_ex(p, "attached_tids", &arr) &&
	    json_object_is_type(arr, json_type_array) && (n = json_object_array_length(arr))) {
		printf("attached:   ");
		for (i = 0; i < n; i++)
			printf(" %" PRId64, json_object_get_int64(json_object_array_get_idx(arr, i)));
		printf("\n");
	}
}

int cmd_info(struct ipttool *t, int argc, char **argv)
{
	struct json_object *o, *cpu, *cfg, *traces, *tc, *sb, *rg;
	const char *dir;
	char msg[512];
	bool files_ok, per_thread;
	size_t i, n;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: ipttool info DIR\n\nWhat the capture in DIR holds. See ipttool-info(8).\n");
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		ipt_err("info: give exactly one capture directory: ipttool info DIR");
		return 2;
	}
	dir = argv[1];
	o = capture_read_meta(dir, msg, sizeof(msg));
	if (!o) {
		ipt_err("info: %s", msg);
		return 1;
	}
	if (!json_object_object_get_ex(o, "traces", &traces) ||
	    !json_object_is_type(traces, json_type_array) ||
	    !json_object_object_get_ex(o, "cpu", &cpu) ||
	    !json_object_object_get_ex(o, "config", &cfg)) {
		ipt_err("info: %s/%s lacks \"traces\", \"cpu\" or \"config\"", dir, CAPTURE_META);
		json_object_put(o);
		return 1;
	}
	files_ok = check_files(dir, traces);
	if (json_object_object_get_ex(o, "sideband", &sb) && sb)
		files_ok = check_sideband(dir, sb) && files_ok;
	else
		sb = NULL;
	json_object_object_add(o, "files_ok", json_object_new_boolean(files_ok));
	if (t->json)
		return ipt_print_json(t, o);

	printf("capture:     %s (format %s %" PRId64 ")\n", dir, CAPTURE_FORMAT_NAME,
	       get_i64(o, "format_version"));
	if (get_bool(o, "complete"))
		printf("status:      complete\n");
	else
		printf("status:      INCOMPLETE: %s\n", get_str(o, "incomplete_reason") ?
		       get_str(o, "incomplete_reason") : "(no reason given)");
	if (!files_ok)
		printf("files:       MISMATCH: a trace file is missing or its size differs\n");
	printf("cpu:         %s %" PRId64 "/%" PRId64 "/%" PRId64 " (ptxed --cpu %" PRId64
	       "/%" PRId64 "/%" PRId64 "), %s backend\n",
	       get_str(cpu, "vendor") ? get_str(cpu, "vendor") : "?", get_i64(cpu, "family"),
	       get_i64(cpu, "model"), get_i64(cpu, "stepping"), get_i64(cpu, "family"),
	       get_i64(cpu, "model"), get_i64(cpu, "stepping"),
	       get_str(o, "backend") ? get_str(o, "backend") : "?");
	per_thread = get_str(o, "mode") && !strcmp(get_str(o, "mode"), "thread");
	if (per_thread) {
		printf("mode:        per-thread, %zu thread%s traced (of at most %" PRId64 "), %s "
		       "buffer of %" PRId64 " bytes per thread, %s\n",
		       json_object_array_length(traces),
		       json_object_array_length(traces) == 1 ? "" : "s", get_i64(cfg, "max_threads"),
		       get_str(cfg, "buffer") ? get_str(cfg, "buffer") : "?",
		       get_i64(cfg, "buffer_size"), get_bool(cfg, "inherit") ?
		       "new threads and children followed" : "no inherit");
		print_program(o);
	} else {
		printf("mode:        per-CPU, %s buffer of %" PRId64 " bytes per CPU\n",
		       get_str(cfg, "buffer") ? get_str(cfg, "buffer") : "?",
		       get_i64(cfg, "buffer_size"));
	}
	printf("traces:      %s%s%s%s, psb %" PRId64, get_bool(cfg, "user") ? "user " : "",
	       get_bool(cfg, "kernel") ? "kernel " : "", get_bool(cfg, "tsc") ? "tsc " : "",
	       get_bool(cfg, "retcomp") ? "retcomp" : "no-retcomp", get_i64(cfg, "psb_freq"));
	if (get_str(cfg, "mtc_freq"))
		printf(", mtc %" PRId64, get_i64(cfg, "mtc_freq"));
	if (get_str(cfg, "cyc_thresh"))
		printf(", cyc %" PRId64, get_i64(cfg, "cyc_thresh"));
	if (get_str(cfg, "cr3_match"))
		printf(", cr3 0x%" PRIx64, (uint64_t)json_object_get_uint64(
			json_object_object_get_ex(cfg, "cr3_match", &tc) ? tc : NULL));
	if (json_object_object_get_ex(cfg, "ranges", &rg) && json_object_is_type(rg, json_type_array))
		for (i = 0; i < json_object_array_length(rg); i++) {
			struct json_object *r = json_object_array_get_idx(rg, i), *a = NULL, *b = NULL;

			json_object_object_get_ex(r, "start", &a);
			json_object_object_get_ex(r, "end", &b);
			printf(", %s 0x%" PRIx64 "-0x%" PRIx64, get_str(r, "kind") ?
			       get_str(r, "kind") : "?", (uint64_t)json_object_get_uint64(a),
			       (uint64_t)json_object_get_uint64(b));
		}
	printf("\n");
	if (json_object_object_get_ex(o, "time_conv", &tc) && tc)
		printf("time conv:   time_shift %" PRId64 " time_mult %" PRId64 " time_zero %" PRId64 "\n",
		       get_i64(tc, "time_shift"), get_i64(tc, "time_mult"), get_i64(tc, "time_zero"));
	else
		printf("time conv:   none (%s)\n", get_str(o, "time_conv_skipped") ?
		       get_str(o, "time_conv_skipped") : "not recorded");
	print_sideband(sb);
	n = json_object_array_length(traces);
	for (i = 0; i < n; i++) {
		struct json_object *tr = json_object_array_get_idx(traces, i);

		printf("%-12s %" PRId64 " bytes", get_str(tr, "file") ? get_str(tr, "file") : "?",
		       get_i64(tr, "size"));
		if (per_thread) {
			printf(", tid %" PRId64 ", trace %" PRId64, get_i64(tr, "tid"),
			       get_i64(tr, "trace"));
			if (get_str(tr, "parent"))
				printf(", parent trace %" PRId64, get_i64(tr, "parent"));
			else
				printf(", attached");
			if (get_bool(tr, "inherited"))
				printf(", inherited");
			if (get_bool(tr, "exited"))
				printf(", exited");
			if (get_bool(tr, "detached"))
				printf(", detached");
			if (get_i64(tr, "missed") > 0)
				printf(", %" PRId64 " new threads NOT traced", get_i64(tr, "missed"));
			if (get_i64(tr, "busy") > 0)
				printf(", %" PRId64 " gaps (unit busy)", get_i64(tr, "busy"));
		}
		if (get_bool(tr, "wrapped"))
			printf(", ring wrapped %" PRId64 " times, %" PRId64 " bytes overwritten",
			       get_i64(tr, "wrap_count"), get_i64(tr, "bytes_lost"));
		if (get_bool(tr, "stopped_full"))
			printf(", buffer filled: stopped early");
		if (get_bool(tr, "hw_error"))
			printf(", PT unit error");
		if (get_str(tr, "write_error"))
			printf(", WRITE ERROR: %s", get_str(tr, "write_error"));
		if (!get_bool(tr, "file_ok"))
			printf(", FILE MISMATCH");
		printf("\n");
	}
	json_object_put(o);
	return 0;
}

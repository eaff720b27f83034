// SPDX-License-Identifier: GPL-2.0
/*
 * ipttool: messages and output helpers shared by the commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipttool.h"

/* -j was given: errors go to stdout as JSON objects (ipt_err()). */
static bool json_errors;

void ipt_set_json_errors(bool on)
{
	json_errors = on;
}

/*
 * ipt_defer_errors(): with -j, a command that ends with one JSON document
 * (decode's summary) keeps its errors here, joined by "; ", for that
 * document, so that stdout holds one document only.
 */
static bool defer_errors;
static char *deferred;

void ipt_defer_errors(bool on)
{
	defer_errors = on;
}

char *ipt_take_errors(void)
{
	char *e = deferred;

	deferred = NULL;
	return e;
}

/* Keep @msg for ipt_take_errors(); false when out of memory. */
static bool defer_msg(const char *msg)
{
	size_t old = deferred ? strlen(deferred) : 0;
	char *p = realloc(deferred, old + (old ? 2 : 0) + strlen(msg) + 1);

	if (!p)
		return false;
	if (old)
		memcpy(p + old, "; ", 2);
	strcpy(p + old + (old ? 2 : 0), msg);
	deferred = p;
	return true;
}

void ipt_err(const char *fmt, ...)
{
	va_list ap;

	if (json_errors) {
		char msg[1024];
		struct json_object *o = json_object_new_object();

		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		if (defer_errors && defer_msg(msg)) {
			json_object_put(o);
			return;
		}
		if (o) {
			json_object_object_add(o, "error", json_object_new_string(msg));
			puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
			json_object_put(o);
			return;
		}
		/* no memory for JSON: the text form on stderr below */
	}
	fputs("ipttool: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/*
 * Output files of ipt_fopen_out(): a stdio stream over the file that
 * keeps the errno of its first failed write, which stdio forgets (a
 * write that fails while a long output is still being written leaves
 * only ferror(); the fflush() at the end then has nothing to write).
 */
struct out_file {
	FILE *f;
	int fd;
	int err;
};

static struct out_file *out_files[16];

static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
	struct out_file *o = cookie;
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!o->err)
				o->err = w < 0 ? errno : EIO;
			return done ? (ssize_t)done : -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)n;
}

static int out_close(void *cookie)
{
	struct out_file *o = cookie;
	int r = close(o->fd);

	for (size_t i = 0; i < sizeof(out_files) / sizeof(out_files[0]); i++)
		if (out_files[i] == o)
			out_files[i] = NULL;
	free(o);
	return r;
}

FILE *ipt_fopen_out(const char *path)
{
	static const cookie_io_functions_t io = { .write = out_write, .close = out_close };
	struct out_file *o = calloc(1, sizeof(*o));
	size_t i;

	if (!o)
		return NULL;
	for (i = 0; i < sizeof(out_files) / sizeof(out_files[0]) && out_files[i]; i++)
		;
	o->fd = i < sizeof(out_files) / sizeof(out_files[0]) ?
		open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
	if (o->fd < 0) {
		if (i == sizeof(out_files) / sizeof(out_files[0]))
			errno = EMFILE;
		free(o);
		return NULL;
	}
	o->f = fopencookie(o, "w", io);
	if (!o->f) {
		close(o->fd);
		free(o);
		return NULL;
	}
	out_files[i] = o;
	return o->f;
}

/* The errno of @f's first failed write, if ipt_fopen_out() opened it; else 0. */
static int out_errno(FILE *f)
{
	for (size_t i = 0; i < sizeof(out_files) / sizeof(out_files[0]); i++)
		if (out_files[i] && out_files[i]->f == f)
			return out_files[i]->err;
	return 0;
}

int ipt_close_out(FILE *f, const char *name)
{
	static bool stdout_failed;	/* said once: a later check stays quiet */
	bool bad = ferror(f);
	int err = 0;

	errno = 0;
	if (fflush(f))
		err = errno;
	if (out_errno(f))
		err = out_errno(f);	/* the first failure's reason */
	if (f != stdout && f != stderr && fclose(f) && !err)
		err = errno;
	if (!bad && !err)
		return 0;
	if (f == stdout) {
		if (stdout_failed)
			return 1;
		stdout_failed = true;
		/* an error about stdout cannot go to stdout */
		json_errors = false;
	}
	/* ferror(): an earlier fprintf/fwrite failed, its errno is gone */
	ipt_err("%s: %s", name, err ? strerror(err) : "write error");
	return 1;
}

struct json_object *ipt_json_hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

void ipt_err_open(const struct ipttool *t, enum iptcap_err err)
{
	ipt_err("cannot open %s: %s", t->device, iptcap_strerror(err));
	switch (err) {
	case IPTCAP_ERR_NO_DEVICE:
		fprintf(stderr, "  Load the driver first: 'insmod ipt.ko' (or 'modprobe ipt').\n");
		break;
	case IPTCAP_ERR_PERMISSION:
		fprintf(stderr, "  Run as root, or give the program CAP_PERFMON.\n");
		break;
	default:
		break;
	}
}

/* Replace the number @key of @o (if there) by its hex string. */
static void hex_key(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int))
		json_object_object_add(o, key, ipt_json_hex(json_object_get_uint64(v)));
}

/*
 * The 64-bit addresses of capture metadata (meta.json keeps them as
 * numbers, Documentation/capture-format.rst) as hex strings in -j output.
 */
static void hex_addrs(struct json_object *obj)
{
	struct json_object *cfg, *rg;

	if (!json_object_object_get_ex(obj, "config", &cfg) ||
	    !json_object_is_type(cfg, json_type_object))
		return;
	hex_key(cfg, "cr3_match");
	if (json_object_object_get_ex(cfg, "ranges", &rg) && json_object_is_type(rg, json_type_array))
		for (size_t i = 0; i < json_object_array_length(rg); i++) {
			hex_key(json_object_array_get_idx(rg, i), "start");
			hex_key(json_object_array_get_idx(rg, i), "end");
		}
}

int ipt_print_json(const struct ipttool *t, struct json_object *obj)
{
	int flags = t->pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED :
				JSON_C_TO_STRING_PLAIN;
	int ret = 0;

	if (!obj) {
		ipt_err("out of memory building JSON");
		return 1;
	}
	hex_addrs(obj);
	if (puts(json_object_to_json_string_ext(obj, flags)) == EOF)
		ret = 1;
	json_object_put(obj);
	return ret;
}

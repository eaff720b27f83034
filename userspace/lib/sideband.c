// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libiptcap: sideband, i.e. what ran where.  Software dummy perf events,
 * one per online CPU, report executable mappings, comm/exec, fork/exit and
 * context switches with timestamps on the perf clock; a walk of /proc
 * reports what existed before they were enabled.  Also the kernel's
 * TSC <-> perf time conversion.
 */
#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "iptcap.h"

#define MSG(...) do { if (msg && msg_len) snprintf(msg, msg_len, __VA_ARGS__); } while (0)

/* ---- time conversion ----------------------------------------------------- */

static int perf_open(struct perf_event_attr *attr, int pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void read_conv(const struct perf_event_mmap_page *pg, struct iptcap_time_conv *tc)
{
	uint32_t seq;

	do {
		seq = __atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE);
		tc->time_shift = pg->time_shift;
		tc->time_mult = pg->time_mult;
		tc->time_zero = pg->time_zero;
	} while (__atomic_load_n(&pg->lock, __ATOMIC_ACQUIRE) != seq || (seq & 1));
}

enum iptcap_err iptcap_read_time_conv(struct iptcap_time_conv *tc, char *msg, size_t msg_len)
{
	struct perf_event_attr attr;
	struct perf_event_mmap_page *pg;
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	enum iptcap_err err = IPTCAP_OK;
	int fd, e;

	memset(tc, 0, sizeof(*tc));
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.exclude_kernel = 1;
	fd = perf_open(&attr, 0, -1);
	if (fd < 0) {
		e = errno;
		MSG("perf_event_open of a dummy event failed: %s", strerror(e));
		return iptcap_err_from_errno(e);
	}
	pg = mmap(NULL, psz, PROT_READ, MAP_SHARED, fd, 0);
	if (pg == MAP_FAILED) {
		e = errno;
		MSG("mmap of the perf event page failed: %s", strerror(e));
		close(fd);
		return iptcap_err_from_errno(e);
	}
	if (!pg->cap_user_time_zero) {
		MSG("the kernel offers no TSC conversion (cap_user_time_zero is 0)");
		err = IPTCAP_ERR_UNSUPPORTED;
	} else {
		read_conv(pg, tc);
	}
	munmap(pg, psz);
	close(fd);
	return err;
}

uint64_t iptcap_tsc_to_time(const struct iptcap_time_conv *tc, uint64_t tsc)
{
	uint64_t quot = tsc >> tc->time_shift;
	uint64_t rem = tsc & (((uint64_t)1 << tc->time_shift) - 1);

	return tc->time_zero + quot * tc->time_mult + ((rem * tc->time_mult) >> tc->time_shift);
}

uint64_t iptcap_time_to_tsc(const struct iptcap_time_conv *tc, uint64_t time)
{
	uint64_t t = time - tc->time_zero, quot, rem;

	if (!tc->time_mult)
		return 0;
	quot = t / tc->time_mult;
	rem = t % tc->time_mult;
	return (quot << tc->time_shift) + (rem << tc->time_shift) / tc->time_mult;
}

/* ---- parsing ------------------------------------------------------------- */

/* sample_id_all trailer for PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU */
struct sb_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

#define SB_SAMPLE_TYPE	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A NUL-terminated string in [p, end); NULL if unterminated. */
static const char *str_in(const unsigned char *p, const unsigned char *end)
{
	if (p >= end || !memchr(p, '\0', (size_t)(end - p)))
		return NULL;
	return (const char *)p;
}

int iptcap_sb_parse(const void *rec, size_t len, struct iptcap_sb_rec *out)
{
	const unsigned char *p = rec, *body, *end;
	struct perf_event_header h;
	struct sb_sample_id id;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(h) + sizeof(id))
		return -1;
	memcpy(&h, p, sizeof(h));
	if (h.size != len)
		return -1;
	out->raw_type = h.type;
	out->misc = h.misc;
	out->raw = rec;
	out->raw_len = len;
	memcpy(&id, p + len - sizeof(id), sizeof(id));
	out->pid = id.pid;
	out->tid = id.tid;
	out->time = id.time;
	out->cpu = id.cpu;
	body = p + sizeof(h);
	end = p + len - sizeof(id);

	switch (h.type) {
	case PERF_RECORD_MMAP2:
		if (end - body < 8 + 24 + 24 + 8)
			return -1;
		out->type = IPTCAP_SB_MMAP;
		out->pid = rd32(body);
		out->tid = rd32(body + 4);
		out->addr = rd64(body + 8);
		out->len = rd64(body + 16);
		out->pgoff = rd64(body + 24);
		if (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			out->build_id_size = body[32];
			if (out->build_id_size > sizeof(out->build_id))
				return -1;
			memcpy(out->build_id, body + 36, out->build_id_size);
		} else {
			out->has_dev = true;
			out->maj = rd32(body + 32);
			out->min = rd32(body + 36);
			out->ino = rd64(body + 40);
			out->ino_generation = rd64(body + 48);
		}
		out->prot = rd32(body + 56);
		out->flags = rd32(body + 60);
		out->name = str_in(body + 64, end);
		return out->name ? 0 : -1;
	case PERF_RECORD_MMAP:
		if (end - body < 8 + 24)
			return -1;
		out->type = IPTCAP_SB_MMAP;
		out->pid = rd32(body);
		out->tid = rd32(body + 4);
		out->addr = rd64(body + 8);
		out->len = rd64(body + 16);
		out->pgoff = rd64(body + 24);
		out->prot = 0x4;	/* PROT_EXEC: attr.mmap reports executable ones */
		out->name = str_in(body + 32, end);
		return out->name ? 0 : -1;
	case PERF_RECORD_COMM:
		if (end - body < 8)
			return -1;
		out->type = IPTCAP_SB_COMM;
		out->pid = rd32(body);
		out->tid = rd32(body + 4);
		out->exec = !!(h.misc & PERF_RECORD_MISC_COMM_EXEC);
		out->name = str_in(body + 8, end);
		return out->name ? 0 : -1;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (end - body < 24)
			return -1;
		out->type = h.type == PERF_RECORD_FORK ? IPTCAP_SB_FORK : IPTCAP_SB_EXIT;
		out->pid = rd32(body);
		out->ppid = rd32(body + 4);
		out->tid = rd32(body + 8);
		out->ptid = rd32(body + 12);
		out->time = rd64(body + 16);
		return 0;
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (end - body < 8)
			return -1;
		out->next_prev_pid = rd32(body);
		out->next_prev_tid = rd32(body + 4);
		/* fall through */
	case PERF_RECORD_SWITCH:
		out->type = IPTCAP_SB_SWITCH;
		out->switch_out = !!(h.misc & PERF_RECORD_MISC_SWITCH_OUT);
		out->preempt = out->switch_out && (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
		return 0;
	case PERF_RECORD_LOST:
		if (end - body < 16)
			return -1;
		out->type = IPTCAP_SB_LOST;
		out->lost = rd64(body + 8);
		return 0;
	default:
		out->type = IPTCAP_SB_OTHER;
		return 0;
	}
}

/* ---- per-CPU events -------------------------------------------------------- */

struct sb_cpu {
	int fd;
	struct perf_event_mmap_page *pg;
	size_t map_len;
	struct iptcap_sb_cpu_stats st;
};

struct iptcap_sb {
	struct sb_cpu *cpus;
	unsigned int nr;
	size_t data_size;
	bool build_ids;
	unsigned char *tmp;	/* a record that wraps around the ring's end */
};

static void sb_attr(struct perf_event_attr *a, const struct iptcap_sb_opts *o, bool build_id,
		    size_t data_size)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->sample_type = SB_SAMPLE_TYPE;
	a->disabled = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->context_switch = !o->no_switch;
	a->sample_id_all = 1;
	a->build_id = build_id;
	/* Wake pollers when a ring is a quarter full (see iptcap_sb_wait()). */
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(data_size / 4);
}

void iptcap_sb_close(struct iptcap_sb *sb)
{
	unsigned int i;

	if (!sb)
		return;
	for (i = 0; i < sb->nr; i++) {
		if (sb->cpus[i].pg)
			munmap(sb->cpus[i].pg, sb->cpus[i].map_len);
		close(sb->cpus[i].fd);
	}
	free(sb->cpus);
	free(sb->tmp);
	free(sb);
}

/* The online CPUs, from /sys (a list like "0-3,5"); -1 if unreadable. */
static int online_cpus(unsigned char *online, unsigned int max)
{
	char buf[4096], *s = buf;
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	while (*s && *s != '\n') {
		unsigned long a, b, i;
		char *end;

		a = strtoul(s, &end, 10);
		if (end == s)
			return -1;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtoul(s + 1, &end, 10);
			s = end;
		}
		for (i = a; i <= b && i < max; i++)
			online[i] = 1;
		if (*s == ',')
			s++;
	}
	return 0;
}

enum iptcap_err iptcap_sb_open(const struct iptcap_sb_opts *opts, struct iptcap_sb **out,
			       char *msg, size_t msg_len)
{
	static const struct iptcap_sb_opts defaults;
	const struct iptcap_sb_opts *o = opts ? opts : &defaults;
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int max = conf > 0 ? (unsigned int)conf : 1, pages, cpu;
	unsigned char *online;
	struct perf_event_attr attr;
	struct iptcap_sb *sb;
	enum iptcap_err err = IPTCAP_OK;
	bool build_id = !o->no_build_id;
	int e;

	*out = NULL;
	pages = o->data_pages ? o->data_pages : 256;
	if (pages & (pages - 1)) {
		MSG("the sideband ring must be a power of two pages (got %u)", pages);
		return IPTCAP_ERR_INVALID;
	}
	sb = calloc(1, sizeof(*sb));
	online = calloc(max, 1);
	if (!sb || !online || !(sb->cpus = calloc(max, sizeof(*sb->cpus))) ||
	    !(sb->tmp = malloc(1 << 16))) {
		free(online);
		iptcap_sb_close(sb);
		return IPTCAP_ERR_NOMEM;
	}
	if (online_cpus(online, max))
		memset(online, 1, max);
	sb->data_size = pages * psz;
	if (o->tid) {
		/* One event following the thread wherever it runs. */
		memset(online, 0, max);
		online[0] = 1;
	}
	for (cpu = 0; cpu < max; cpu++) {
		struct sb_cpu *c = &sb->cpus[sb->nr];
		int fd;

		if (!online[cpu])
			continue;
		sb_attr(&attr, o, build_id, pages * psz);
		fd = o->tid ? perf_open(&attr, (int)o->tid, -1) : perf_open(&attr, -1, (int)cpu);
		if (fd < 0 && build_id && (errno == EINVAL || errno == E2BIG)) {
			/* A kernel before 5.12: no build-ids in mmap2 records. */
			build_id = false;
			sb_attr(&attr, o, false, pages * psz);
			fd = o->tid ? perf_open(&attr, (int)o->tid, -1) :
				      perf_open(&attr, -1, (int)cpu);
		}
		if (fd < 0) {
			e = errno;
			if (e == ENODEV)	/* went offline meanwhile */
				continue;
			err = iptcap_err_from_errno(e);
			if ((e == EACCES || e == EPERM) && o->tid)
				MSG("perf_event_open for the sideband of thread %u was refused (%s): "
				    "needs kernel.perf_event_paranoid <= 2, or CAP_PERFMON",
				    o->tid, strerror(e));
			else if (e == EACCES || e == EPERM)
				MSG("perf_event_open for CPU-wide sideband was refused (%s): needs "
				    "CAP_PERFMON or root, or kernel.perf_event_paranoid <= 0",
				    strerror(e));
			else if (o->tid)
				MSG("perf_event_open of a dummy event for thread %u failed: %s",
				    o->tid, strerror(e));
			else
				MSG("perf_event_open of a dummy event on CPU %u failed: %s", cpu,
				    strerror(e));
			goto fail;
		}
		c->fd = fd;
		c->st.cpu = o->tid ? (uint32_t)-1 : cpu;
		c->map_len = psz + sb->data_size;
		c->pg = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		sb->nr++;
		if (c->pg == MAP_FAILED && (errno == EPERM || errno == ENOMEM) && !o->data_pages &&
		    pages > 8) {
			/*
			 * Over perf_event_mlock_kb (per user, times the online
			 * CPUs) without CAP_IPC_LOCK: start again, smaller.
			 */
			unsigned int k;

			c->pg = NULL;
			for (k = 0; k < sb->nr; k++) {
				if (sb->cpus[k].pg)
					munmap(sb->cpus[k].pg, sb->cpus[k].map_len);
				close(sb->cpus[k].fd);
			}
			memset(sb->cpus, 0, max * sizeof(*sb->cpus));
			sb->nr = 0;
			pages /= 2;
			sb->data_size = pages * psz;
			cpu = (unsigned int)-1;	/* the loop's ++ makes it 0 */
			continue;
		}
		if (c->pg == MAP_FAILED) {
			e = errno;
			c->pg = NULL;
			err = iptcap_err_from_errno(e);
			MSG("mmap of the sideband ring of CPU %u (%zu KiB) failed: %s%s", cpu,
			    sb->data_size >> 10, strerror(e),
			    e == EPERM ? " (perf_event_mlock_kb too small?)" : "");
			goto fail;
		}
	}
	if (!sb->nr) {
		MSG("no online CPU for sideband events");
		err = IPTCAP_ERR_IO;
		goto fail;
	}
	sb->build_ids = build_id;
	free(online);
	*out = sb;
	return IPTCAP_OK;
fail:
	free(online);
	iptcap_sb_close(sb);
	return err;
}

int iptcap_sb_wait(struct iptcap_sb *sb, int timeout_ms)
{
	struct pollfd fds[64];
	unsigned int i, n = sb->nr < 64 ? sb->nr : 64;
	int ret;

	for (i = 0; i < n; i++) {
		fds[i].fd = sb->cpus[i].fd;
		fds[i].events = POLLIN;
		fds[i].revents = 0;
	}
	ret = poll(fds, n, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? 0 : -1;
	/* A ring that hangs up would wake every poll: let the caller sleep. */
	for (i = 0; i < n; i++)
		if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL))
			return -1;
	return ret > 0;
}

static enum iptcap_err sb_ioctl(struct iptcap_sb *sb, unsigned long req)
{
	unsigned int i;

	for (i = 0; i < sb->nr; i++)
		if (ioctl(sb->cpus[i].fd, req, 0))
			return iptcap_err_from_errno(errno);
	return IPTCAP_OK;
}

enum iptcap_err iptcap_sb_enable(struct iptcap_sb *sb)
{
	return sb_ioctl(sb, PERF_EVENT_IOC_ENABLE);
}

enum iptcap_err iptcap_sb_disable(struct iptcap_sb *sb)
{
	return sb_ioctl(sb, PERF_EVENT_IOC_DISABLE);
}

bool iptcap_sb_build_ids(const struct iptcap_sb *sb)
{
	return sb->build_ids;
}

unsigned int iptcap_sb_nr_cpus(const struct iptcap_sb *sb)
{
	return sb->nr;
}

void iptcap_sb_cpu_stats(const struct iptcap_sb *sb, unsigned int i,
			 struct iptcap_sb_cpu_stats *st)
{
	if (i < sb->nr)
		*st = sb->cpus[i].st;
	else
		memset(st, 0, sizeof(*st));
}

int iptcap_sb_read(struct iptcap_sb *sb, iptcap_sb_fn fn, void *arg)
{
	unsigned int i;

	for (i = 0; i < sb->nr; i++) {
		struct sb_cpu *c = &sb->cpus[i];
		const unsigned char *data = (const unsigned char *)c->pg + c->pg->data_offset;
		uint64_t size = c->pg->data_size, head, tail;
		int ret = 0;

		if (!size)
			size = sb->data_size;
		head = __atomic_load_n(&c->pg->data_head, __ATOMIC_ACQUIRE);
		tail = c->pg->data_tail;
		while (tail < head) {
			struct perf_event_header h;
			struct iptcap_sb_rec r;
			const unsigned char *rec;
			uint64_t off = tail % size;

			memcpy(&h, data + off, sizeof(h));	/* 8-byte aligned: never split */
			if (h.size < sizeof(h) || h.size > head - tail) {
				tail = head;	/* corrupt: drop the rest */
				break;
			}
			if (off + h.size <= size) {
				rec = data + off;
			} else {
				size_t first = (size_t)(size - off);

				memcpy(sb->tmp, data + off, first);
				memcpy(sb->tmp + first, data, h.size - first);
				rec = sb->tmp;
			}
			c->st.records++;
			c->st.bytes += h.size;
			if (!iptcap_sb_parse(rec, h.size, &r)) {
				if (r.type == IPTCAP_SB_LOST)
					c->st.lost += r.lost;
				ret = fn(&r, arg);
			}
			tail += h.size;
			if (ret) {
				__atomic_store_n(&c->pg->data_tail, tail, __ATOMIC_RELEASE);
				return ret;
			}
		}
		__atomic_store_n(&c->pg->data_tail, tail, __ATOMIC_RELEASE);
	}
	return 0;
}

/* ---- /proc snapshot ------------------------------------------------------- */

static int read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* One /proc/PID/maps line into @r (executable ones only); 1 if reported. */
static int parse_maps_line(char *line, struct iptcap_sb_rec *r)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
		   &min, &ino, &pos) < 7 || strlen(perms) < 4)
		return 0;
	if (perms[2] != 'x')
		return 0;
	r->type = IPTCAP_SB_MMAP;
	r->snapshot = true;
	r->addr = start;
	r->len = end - start;
	r->pgoff = off;
	r->prot = (perms[0] == 'r' ? 0x1 : 0) | (perms[1] == 'w' ? 0x2 : 0) | 0x4;
	r->flags = perms[3] == 's' ? 0x01 : 0x02;	/* MAP_SHARED : MAP_PRIVATE */
	r->has_dev = true;
	r->maj = maj;
	r->min = min;
	r->ino = ino;
	line += pos;
	line[strcspn(line, "\n")] = '\0';
	r->name = *line ? line : "//anon";
	return 1;
}

/* Build-ids already read during one snapshot, by device and inode. */
#define BID_SLOTS 4096
struct bid_cache {
	struct {
		uint32_t maj, min;
		uint64_t ino;
		uint8_t len;
		uint8_t id[20];
		bool used;
	} e[BID_SLOTS];
};

static void cached_build_id(struct bid_cache *bc, struct iptcap_sb_rec *r)
{
	unsigned int h = (unsigned int)((r->ino * 0x9e3779b97f4a7c15ull ^ r->maj * 131u ^ r->min) >> 40);
	unsigned int i, n;

	for (n = 0; bc && n < 16; n++) {
		i = (h + n) % BID_SLOTS;
		if (!bc->e[i].used)
			break;
		if (bc->e[i].ino == r->ino && bc->e[i].maj == r->maj && bc->e[i].min == r->min) {
			r->build_id_size = bc->e[i].len;
			memcpy(r->build_id, bc->e[i].id, sizeof(r->build_id));
			return;
		}
	}
	iptcap_elf_build_id(r->name, r->build_id, &r->build_id_size);
	if (bc && n < 16) {
		i = (h + n) % BID_SLOTS;
		bc->e[i].used = true;
		bc->e[i].ino = r->ino;
		bc->e[i].maj = r->maj;
		bc->e[i].min = r->min;
		bc->e[i].len = r->build_id_size;
		memcpy(bc->e[i].id, r->build_id, sizeof(r->build_id));
	}
}

static int snap_process(const char *proc, const char *pid_s, iptcap_sb_fn fn, void *arg,
			struct iptcap_snapshot_stats *st, struct bid_cache *bc)
{
	char path[512], comm[64], *line = NULL;
	size_t cap = 0;
	struct iptcap_sb_rec r;
	struct dirent *e;
	uint32_t pid = (uint32_t)strtoul(pid_s, NULL, 10);
	DIR *d;
	FILE *f;
	int ret = 0, nthreads = 0;

	snprintf(path, sizeof(path), "%s/%s/task", proc, pid_s);
	d = opendir(path);
	if (!d) {
		st->vanished++;
		return 0;
	}
	while ((e = readdir(d)) && !ret) {
		if (!all_digits(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/task/%s/comm", proc, pid_s, e->d_name);
		if (read_small(path, comm, sizeof(comm)))
			continue;
		memset(&r, 0, sizeof(r));
		r.type = IPTCAP_SB_COMM;
		r.snapshot = true;
		r.pid = pid;
		r.tid = (uint32_t)strtoul(e->d_name, NULL, 10);
		r.name = comm;
		nthreads++;
		st->threads++;
		ret = fn(&r, arg);
	}
	closedir(d);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/%s/maps", proc, pid_s);
	f = fopen(path, "re");
	if (!f || !nthreads) {
		if (f)
			fclose(f);
		st->vanished++;
		return 0;
	}
	st->processes++;
	while (!ret && getline(&line, &cap, f) > 0) {
		memset(&r, 0, sizeof(r));
		if (!parse_maps_line(line, &r))
			continue;
		r.pid = r.tid = pid;
		/* The build-id of the file as it is now (0 bytes if none). */
		if (r.name[0] == '/' && r.ino)
			cached_build_id(bc, &r);
		st->maps++;
		ret = fn(&r, arg);
	}
	free(line);
	fclose(f);
	return ret;
}

int iptcap_proc_snapshot(const char *proc, iptcap_sb_fn fn, void *arg,
			 struct iptcap_snapshot_stats *st)
{
	struct iptcap_snapshot_stats dummy;
	struct bid_cache *bc = calloc(1, sizeof(*bc));	/* NULL: no cache */
	struct dirent *e;
	DIR *d;
	int ret = 0;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (!proc)
		proc = "/proc";
	d = opendir(proc);
	if (!d) {
		free(bc);
		return 0;
	}
	while (!ret && (e = readdir(d)))
		if (all_digits(e->d_name))
			ret = snap_process(proc, e->d_name, fn, arg, st, bc);
	closedir(d);
	free(bc);
	return ret;
}

/* ---- ELF build-id ----------------------------------------------------------- */

static int note_build_id(const unsigned char *p, size_t n, uint8_t id[20], uint8_t *len)
{
	size_t off = 0;

	while (off + 12 <= n) {
		uint32_t namesz = rd32(p + off), descsz = rd32(p + off + 4), type = rd32(p + off + 8);
		size_t name_off = off + 12;
		size_t desc_off = name_off + ((namesz + 3) & ~3u);
		size_t next = desc_off + ((descsz + 3) & ~3u);

		if (next > n || next <= off)
			return -1;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_off, "GNU", 4) &&
		    descsz && descsz <= 20) {
			memcpy(id, p + desc_off, descsz);
			*len = (uint8_t)descsz;
			return 0;
		}
		off = next;
	}
	return -1;
}

/*
 * Program header @i of the ELF file @fd of class @cls (ELFCLASS32/64) whose
 * table is at @phoff with entries @entsize apart: its type, file offset and
 * size.  0, or -1 when it cannot be read.
 */
static int elf_phdr(int fd, int cls, uint64_t phoff, unsigned int entsize, unsigned int i,
		    uint32_t *type, uint64_t *off, uint64_t *size)
{
	off_t at = (off_t)(phoff + (uint64_t)i * entsize);

	if (cls == ELFCLASS64) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), at) != (ssize_t)sizeof(ph))
			return -1;
		*type = ph.p_type;
		*off = ph.p_offset;
		*size = ph.p_filesz;
	} else {
		Elf32_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), at) != (ssize_t)sizeof(ph))
			return -1;
		*type = ph.p_type;
		*off = ph.p_offset;
		*size = ph.p_filesz;
	}
	return 0;
}

int iptcap_elf_build_id(const char *path, uint8_t id[20], uint8_t *len)
{
	Elf64_Ehdr eh;
	Elf32_Ehdr eh32;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), ret = -1, cls;
	unsigned int i, phnum, entsize;
	uint64_t phoff;

	*len = 0;
	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG))
		goto out;
	cls = eh.e_ident[EI_CLASS];
	if (cls == ELFCLASS64) {
		phoff = eh.e_phoff;
		phnum = eh.e_phnum;
		entsize = eh.e_phentsize;
	} else if (cls == ELFCLASS32) {
		/* The 32-bit header is shorter than what was read: read it again. */
		if (pread(fd, &eh32, sizeof(eh32), 0) != (ssize_t)sizeof(eh32))
			goto out;
		phoff = eh32.e_phoff;
		phnum = eh32.e_phnum;
		entsize = eh32.e_phentsize;
	} else {
		goto out;
	}
	for (i = 0; i < phnum && i < 256 && ret; i++) {
		uint64_t off, size;
		uint32_t type;
		unsigned char *buf;

		if (elf_phdr(fd, cls, phoff, entsize, i, &type, &off, &size))
			break;
		if (type != PT_NOTE || !size || size > 65536)
			continue;
		buf = malloc(size);
		if (buf && pread(fd, buf, size, (off_t)off) == (ssize_t)size)
			ret = note_build_id(buf, size, id, len);
		free(buf);
	}
out:
	close(fd);
	return ret;
}

/* ---- ELF symbols -------------------------------------------------------- */

int iptcap_elf_symbol(const char *path, const char *name, uint64_t *start, uint64_t *size,
		      bool *pie, char *msg, size_t msg_len)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1, pass;
	unsigned int i;

	if (fd < 0) {
		MSG("%s: %s", path, strerror(errno));
		return -1;
	}
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum) {
		MSG("%s is not a 64-bit ELF file with sections", path);
		goto out;
	}
	*pie = eh.e_type == ET_DYN;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || pread(fd, sh, eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff) !=
		   (ssize_t)(eh.e_shnum * sizeof(*sh))) {
		MSG("%s: cannot read its section headers", path);
		goto out;
	}
	/* .symtab first (every symbol), then .dynsym (exported ones). */
	for (pass = 0; pass < 2 && ret; pass++) {
		for (i = 0; i < eh.e_shnum && ret; i++) {
			const Elf64_Shdr *st = &sh[i], *strh;
			Elf64_Sym *syms;
			char *strs;
			size_t n, k;

			if (st->sh_type != (pass ? SHT_DYNSYM : SHT_SYMTAB) ||
			    st->sh_entsize != sizeof(Elf64_Sym) || st->sh_link >= eh.e_shnum ||
			    st->sh_size > (256u << 20))
				continue;
			strh = &sh[st->sh_link];
			if (strh->sh_size > (256u << 20))
				continue;
			n = st->sh_size / sizeof(Elf64_Sym);
			syms = malloc(st->sh_size ? st->sh_size : 1);
			strs = malloc(strh->sh_size + 1);
			if (syms && strs &&
			    pread(fd, syms, st->sh_size, (off_t)st->sh_offset) == (ssize_t)st->sh_size &&
			    pread(fd, strs, strh->sh_size, (off_t)strh->sh_offset) ==
			    (ssize_t)strh->sh_size) {
				strs[strh->sh_size] = '\0';
				for (k = 0; k < n; k++) {
					if (syms[k].st_name >= strh->sh_size ||
					    syms[k].st_shndx == SHN_UNDEF ||
					    strcmp(strs + syms[k].st_name, name))
						continue;
					*start = syms[k].st_value;
					*size = syms[k].st_size;
					ret = 0;
					break;
				}
			}
			free(syms);
			free(strs);
		}
	}
	if (ret)
		MSG("%s: no symbol '%s' (is the file stripped?)", path, name);
out:
	free(sh);
	close(fd);
	return ret;
}

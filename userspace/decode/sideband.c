// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode: code images of processes from a capture's sideband
 * (sideband.jsonl, Documentation/capture-format.rst "Sideband").
 *
 * What is done: the process's executable mappings as they stand at the
 * end of the recording (snapshot, then the timed records in time order:
 * fork copies the parent's mappings, mmap replaces what it
 * overlaps; an exec keeps the old mappings the new program does not
 * replace, for the instructions before the execve), the dumped vDSO for
 * [vdso].  A per-CPU capture with switch records, TSC packets and a time
 * conversion gets every process's images and a per-CPU timeline of who
 * runs when (struct dec_sched), so that decoders switch images at context
 * switches; there and in a per-thread capture with TSC and a time
 * conversion, mappings are kept in time order (each with when it existed,
 * an exec ending them), so that decoders pick the ones of the trace's
 * time.  See Documentation/decode.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "internal.h"

struct sb_map {
	long pid;
	uint64_t start, len, pgoff;
	uint64_t from, until;	/* perf time it was mapped: [from, until) */
	char *file;
	char *vdso;
	char *build_id;
};

struct sb_rec {
	struct json_object *o;
	uint64_t time;
	size_t seq;
};

struct sb_state {
	struct sb_map *maps;
	size_t n, cap;
	/*
	 * In time order (@timed): mappings replaced by an mmap or gone at an
	 * exec, with their @until, are kept here instead of dropped.
	 */
	bool timed;
	struct sb_map *old;
	size_t nold, capold;
};

static const char *jstr(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string) ?
	       json_object_get_string(v) : NULL;
}

static int64_t jint(struct json_object *o, const char *k, int64_t d)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_int64(v) : d;
}

static uint64_t juint(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_uint64(v) : 0;
}

static bool jbool(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) && v && json_object_get_boolean(v);
}

static void drop(struct sb_state *s, size_t i)
{
	free(s->maps[i].file);
	free(s->maps[i].vdso);
	free(s->maps[i].build_id);
	s->maps[i] = s->maps[--s->n];
}

/* Mapping @i ends at @time: kept among the old ones (timed), else dropped. */
static void retire(struct sb_state *s, size_t i, uint64_t time)
{
	if (!s->timed) {
		drop(s, i);
		return;
	}
	if (s->nold == s->capold) {
		s->capold = s->capold ? 2 * s->capold : 64;
		s->old = realloc(s->old, s->capold * sizeof(*s->old));
		if (!s->old)
			dec_nomem();
	}
	s->old[s->nold] = s->maps[i];
	s->old[s->nold++].until = time;
	s->maps[i] = s->maps[--s->n];
}

static void add_map(struct sb_state *s, long pid, uint64_t start, uint64_t len, uint64_t pgoff,
		    const char *file, const char *vdso, const char *build_id, uint64_t time)
{
	size_t i;

	/* replaces whatever of the process it overlaps */
	for (i = 0; i < s->n;) {
		struct sb_map *m = &s->maps[i];

		if (m->pid == pid && m->start < start + len && start < m->start + m->len)
			retire(s, i, time);
		else
			i++;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->maps = realloc(s->maps, s->cap * sizeof(*s->maps));
		if (!s->maps)
			dec_nomem();
	}
	s->maps[s->n].pid = pid;
	s->maps[s->n].start = start;
	s->maps[s->n].len = len;
	s->maps[s->n].pgoff = pgoff;
	s->maps[s->n].file = strdup(file);
	s->maps[s->n].vdso = vdso ? strdup(vdso) : NULL;
	s->maps[s->n].build_id = build_id ? strdup(build_id) : NULL;
	s->maps[s->n].from = time;
	s->maps[s->n].until = UINT64_MAX;
	s->n++;
}

/* Apply record @o (at perf time @time, 0 for a snapshot record) to @s. */
static void apply(struct sb_state *s, struct json_object *o, uint64_t time)
{
	const char *type = jstr(o, "type");
	long pid = (long)jint(o, "pid", -1);
	size_t i, n;

	if (!type)
		return;
	if (!strcmp(type, "mmap")) {
		const char *file = jstr(o, "file");

		if (file)
			add_map(s, pid, juint(o, "start"), juint(o, "len"), juint(o, "pgoff"), file,
				jstr(o, "vdso"), jstr(o, "build_id"), time);
	} else if (!strcmp(type, "comm") && jbool(o, "exec")) {
		/*
		 * An exec replaces the process's mappings.  In time order
		 * they end here.  Otherwise one image serves the whole trace,
		 * and the trace of a command starts before the execve (in
		 * ipttool's child): keep the old mappings where the new
		 * program's do not replace them (mmap does).
		 */
		for (i = 0; s->timed && i < s->n;)
			if (s->maps[i].pid == pid)
				retire(s, i, time);
			else
				i++;
	} else if (!strcmp(type, "fork")) {
		long ppid = (long)jint(o, "ppid", -1);

		if (ppid == pid)
			return;
		n = s->n;
		for (i = 0; i < n; i++)
			if (s->maps[i].pid == ppid)
				add_map(s, pid, s->maps[i].start, s->maps[i].len, s->maps[i].pgoff,
					s->maps[i].file, s->maps[i].vdso, s->maps[i].build_id, time);
	}
}

/* Thread @tid of process @pid is named @comm from here on (time order). */
static void set_comm(struct dec_input *in, long pid, long tid, const char *name, bool keep)
{
	char comm[sizeof(in->comms->comm)];
	size_t i;

	if (tid <= 0 || !name)
		return;
	snprintf(comm, sizeof(comm), "%s", name);	/* @name may be in @in->comms */
	for (i = 0; i < in->nr_comms && in->comms[i].tid != tid; i++)
		;
	if (i < in->nr_comms && keep)
		return;
	if (i == in->nr_comms) {
		in->comms = realloc(in->comms, (in->nr_comms + 1) * sizeof(*in->comms));
		if (!in->comms)
			dec_nomem();
		in->nr_comms++;
	}
	in->comms[i].pid = pid;
	in->comms[i].tid = tid;
	snprintf(in->comms[i].comm, sizeof(in->comms[i].comm), "%s", comm);
}

/* The GNU build-id of ELF @path as lower-case hex into @buf; 0, or -1 if none. */
static int file_build_id(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY), ret = -1;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && ret && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4) && nh.n_descsz * 2 < len) {
				for (size_t k = 0; k < nh.n_descsz; k++)
					snprintf(buf + 2 * k, 3, "%02x",
						 ((unsigned char *)d->d_buf)[doff + k]);
				ret = 0;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

/* Add "from @time on, thread @tid of @pid runs on @cpu" to @in's timelines (in time order). */
static void sched_add(struct dec_input *in, int cpu, uint64_t time, long pid, long tid)
{
	struct dec_sched *sc = NULL;
	size_t i;

	for (i = 0; i < in->nr_sched; i++)
		if (in->sched[i].cpu == cpu)
			sc = &in->sched[i];
	if (!sc) {
		in->sched = realloc(in->sched, (in->nr_sched + 1) * sizeof(*in->sched));
		if (!in->sched)
			dec_nomem();
		sc = &in->sched[in->nr_sched++];
		memset(sc, 0, sizeof(*sc));
		sc->cpu = cpu;
	}
	if (!(sc->n & (sc->n - 1))) {
		size_t cap = sc->n ? 2 * sc->n : 1;

		sc->time = realloc(sc->time, cap * sizeof(*sc->time));
		sc->pid = realloc(sc->pid, cap * sizeof(*sc->pid));
		sc->tid = realloc(sc->tid, cap * sizeof(*sc->tid));
		if (!sc->time || !sc->pid || !sc->tid)
			dec_nomem();
	}
	sc->time[sc->n] = time;
	sc->tid[sc->n] = tid;
	sc->pid[sc->n++] = pid;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct sb_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int dec_input_sideband(struct dec_input *in, const char *dir, long pid, char *msg, size_t len)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0, nrec = 0, rcap = 0, i, nexec = 0, added = 0, missing = 0, anon = 0;
	size_t wrong_id = 0, nswitch = 0, nproc = 0;
	struct sb_rec *recs = NULL;
	struct sb_state st = { 0 };
	long exec_pid = 0;
	bool header = false;
	ssize_t l;
	FILE *f;

	snprintf(path, sizeof(path), "%s/sideband.jsonl", dir);
	f = fopen(path, "r");
	if (!f) {
		snprintf(msg, len, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((l = getline(&line, &cap, f)) > 0) {
		struct json_object *o = json_tokener_parse(line);
		const char *type;

		if (!o)
			continue;	/* a torn last line */
		type = jstr(o, "type");
		if (!header) {
			if (!type || strcmp(type, "header") || jint(o, "version", 0) != 1) {
				snprintf(msg, len, "%s: not an ipt sideband file of version 1", path);
				json_object_put(o);
				goto fail;
			}
			header = true;
			json_object_put(o);
			continue;
		}
		if (type && !strcmp(type, "switch") && jint(o, "time", -1) >= 0 &&
		    jint(o, "cpu", -1) >= 0)
			nswitch++;
		if (type && !strcmp(type, "comm") && jbool(o, "exec") &&
		    json_object_object_get_ex(o, "time", NULL) && jint(o, "time", -1) >= 0) {
			if (!nexec || exec_pid != (long)jint(o, "pid", -1))
				nexec++;
			exec_pid = (long)jint(o, "pid", -1);
		}
		if (nrec == rcap) {
			rcap = rcap ? 2 * rcap : 1024;
			recs = realloc(recs, rcap * sizeof(*recs));
			if (!recs)
				dec_nomem();
		}
		recs[nrec].o = o;
		recs[nrec].seq = nrec;
		/* snapshot records (time null) first, in file order */
		recs[nrec].time = jint(o, "time", -1) < 0 ? 0 : (uint64_t)jint(o, "time", 0) + 1;
		nrec++;
	}
	if (!header) {
		snprintf(msg, len, "%s: empty (no header line)", path);
		goto fail;
	}
	if (!pid && in->per_thread) {
		pid = -1;	/* every trace's own process, below */
	} else if (!pid && nswitch && in->cfg_tsc && in->have_time_conv) {
		pid = -2;	/* every process, switched at context switches */
	} else if (!pid && in->program_pid) {
		pid = in->program_pid;
	} else if (!pid) {
		if (nexec != 1) {
			snprintf(msg, len, "%s: %zu processes exec'd during the recording; say whose code "
				 "to use with --pid PID", path, nexec);
			goto fail;
		}
		pid = exec_pid;
	}
	/*
	 * Every process's images (per thread, per CPU switched) with a trace
	 * time to pick by: mappings in time order, each with when it existed.
	 */
	st.timed = pid < 0 && in->cfg_tsc && in->have_time_conv;
	in->timed_maps = st.timed;
	dec_sort(recs, nrec, sizeof(*recs), cmp_rec);
	for (i = 0; i < nrec; i++) {
		const char *type = jstr(recs[i].o, "type");

		/* who enters the CPU: pid/tid of an "in" record, next_prev_* of an "out" one */
		if (pid == -2 && type && !strcmp(type, "switch") && recs[i].time) {
			bool out = jbool(recs[i].o, "out");

			sched_add(in, (int)jint(recs[i].o, "cpu", -1), recs[i].time - 1,
				  (long)jint(recs[i].o, out ? "next_prev_pid" : "pid", 0),
				  (long)jint(recs[i].o, out ? "next_prev_tid" : "tid", 0));
		}
		apply(&st, recs[i].o, recs[i].time ? recs[i].time - 1 : 0);
		/* thread names: a comm record names its thread; a forked one keeps its parent's */
		if (type && !strcmp(type, "comm"))
			set_comm(in, (long)jint(recs[i].o, "pid", -1), (long)jint(recs[i].o, "tid", -1),
				 jstr(recs[i].o, "comm"), false);
		else if (type && !strcmp(type, "fork"))
			set_comm(in, (long)jint(recs[i].o, "pid", -1), (long)jint(recs[i].o, "tid", -1),
				 dec_input_comm(in, 0, (long)jint(recs[i].o, "ptid", -1)), true);
		/* a per-thread trace's process: the pid of its thread's records */
		for (size_t t = 0; pid == -1 && t < in->nr_traces; t++)
			if (in->traces[t].tid > 0 && jint(recs[i].o, "tid", -1) == in->traces[t].tid &&
			    jint(recs[i].o, "pid", -1) > 0)
				in->traces[t].pid = (long)jint(recs[i].o, "pid", -1);
	}
	for (i = 0; i < st.n + st.nold; i++) {
		struct sb_map *m = i < st.n ? &st.maps[i] : &st.old[i - st.n];
		struct dec_image *im;
		char file[PATH_MAX + 64];

		if (pid == -2) {
			/* per-CPU, switched: every process */
		} else if (pid == -1) {
			/* per-thread: the processes of the traces */
			size_t t;

			for (t = 0; t < in->nr_traces && in->traces[t].pid != m->pid; t++)
				;
			if (t == in->nr_traces)
				continue;
		} else if (m->pid != pid) {
			continue;
		}
		if (!strcmp(m->file, "[vdso]")) {
			if (!m->vdso) {
				missing++;
				continue;
			}
			snprintf(file, sizeof(file), "%s/%s", dir, m->vdso);
		} else if (m->file[0] != '/') {
			anon++;		/* //anon (JIT), [vsyscall]: no bytes to decode */
			continue;
		} else {
			snprintf(file, sizeof(file), "%s", m->file);
		}
		if (access(file, R_OK)) {
			missing++;
			continue;
		}
		if (m->build_id && strcmp(m->file, "[vdso]")) {
			char id[256];

			/* the file on this machine must be the one that was mapped */
			if (file_build_id(file, id, sizeof(id)) || strcmp(id, m->build_id)) {
				wrong_id++;
				continue;
			}
		}
		if (dec_input_add_raw_at(in, file, m->pgoff, m->len, m->start, msg, len)) {
			missing++;
			continue;
		}
		im = &in->images[in->nr_images - 1];
		free(im->name);
		im->name = strdup(strcmp(m->file, "[vdso]") ? strrchr(m->file, '/') + 1 : "[vdso]");
		free(im->elf);
		im->elf = strdup(file);
		im->elf_off = m->pgoff;
		im->pid = pid < 0 ? m->pid : 0;
		if (st.timed) {
			im->from = m->from;
			im->until = m->until;
		}
		added++;
	}
	for (i = 0; pid == -2 && i < st.n; i++) {
		size_t k;

		for (k = 0; k < i && st.maps[k].pid != st.maps[i].pid; k++)
			;
		nproc += k == i;
	}
	if (pid == -1) {
		size_t unknown = 0;

		for (i = 0; i < in->nr_traces; i++)
			unknown += !in->traces[i].pid;
		snprintf(in->note, sizeof(in->note),
			 "per-thread capture: each trace with its process's images from the sideband: "
			 "%zu mappings (%zu missing files, %zu with another build-id here, %zu without "
			 "bytes, e.g. JIT); %zu traces of threads the sideband does not name", added,
			 missing, wrong_id, anon, unknown);
	} else if (pid == -2) {
		snprintf(in->note, sizeof(in->note),
			 "per-CPU capture: the images of %zu processes from the sideband, switched at "
			 "%zu context switches: %zu mappings (%zu missing files, %zu with another "
			 "build-id here, %zu without bytes, e.g. JIT)", nproc, nswitch, added, missing,
			 wrong_id, anon);
	} else {
		snprintf(in->note, sizeof(in->note),
			 "images of pid %ld from the sideband: %zu mappings (%zu missing files, %zu with "
			 "another build-id here, %zu without bytes, e.g. JIT), for the whole trace%s",
			 pid, added, missing, wrong_id, anon,
			 in->per_thread || in->pid ? "" :
			 !nswitch ? " (no switch records: context switches not followed)" :
			 !in->cfg_tsc ? " (traced without --tsc: context switches not followed)" :
			 " (no time_conv: context switches not followed)");
	}
	for (i = 0; i < nrec; i++)
		json_object_put(recs[i].o);
	while (st.n)
		drop(&st, 0);
	free(st.maps);
	for (i = 0; i < st.nold; i++) {
		free(st.old[i].file);
		free(st.old[i].vdso);
		free(st.old[i].build_id);
	}
	free(st.old);
	free(recs);
	free(line);
	fclose(f);
	return 0;
fail:
	for (i = 0; i < nrec; i++)
		json_object_put(recs[i].o);
	free(recs);
	free(line);
	fclose(f);
	return -1;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the host tests that run libiptcap against a model of the driver
 * (test_sideband_record, test_thread_record, test_stream) share: open()
 * and ioctl() of their own, and mmap() when the test defines FAKE_MMAP,
 * which send the calls on the model's device to the test's model and
 * every other call to the C library.
 *
 * fake_caps() fills in what every model's IPT_IOC_GET_CAPS answer starts
 * from.
 *
 * The test defines FAKE_PATH, the path of the model's device, includes
 * this header and defines:
 *   fake_open()   open FAKE_PATH: set fake_fd and return it, or -1;
 *   fake_ioctl()  an ioctl on fake_fd, as the driver would answer it
 *                 (-1 and errno on failure);
 *   fake_map()    (FAKE_MMAP only) the memfd holding the @len bytes the
 *                 driver would map at offset *@off of fake_fd, *@off set
 *                 to their offset in that memfd; -1 if the driver would
 *                 refuse the mapping.  mmap() maps them read-only and
 *                 shared, as the driver does, and refuses PROT_WRITE.
 */
#ifndef IPT_FAKE_IPT_H
#define IPT_FAKE_IPT_H

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <linux/ipt.h>

/* The model's device file while it is open, else -1. */
static int fake_fd = -1;

static int fake_open(void);
static int fake_ioctl(unsigned long req, void *arg);

/*
 * Capabilities of a simulated unit on an Intel family 6 CPU of @model,
 * of this ABI, nothing else set: the model's GET_CAPS sets the rest.
 */
static inline void fake_caps(struct ipt_caps *c, uint32_t model)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->abi_version = IPT_ABI_VERSION;
	c->backend = IPT_BACKEND_SIM;
	strcpy(c->vendor, "GenuineIntel");
	c->family = 6;
	c->model = model;
}

int open(const char *path, int flags, ...);
int open(const char *path, int flags, ...)
{
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	va_list ap;
	int mode;

	va_start(ap, flags);
	mode = va_arg(ap, int);
	va_end(ap);
	if (!strcmp(path, FAKE_PATH))
		return fake_open();
	return real(path, flags, mode);
}

int ioctl(int fd, unsigned long req, ...)
{
	int (*real)(int, unsigned long, ...) = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd >= 0 && fd == fake_fd)
		return fake_ioctl(req, arg);
	return real(fd, req, arg);
}

#ifdef FAKE_MMAP
static int fake_map(size_t len, off_t *off);

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *(*real)(void *, size_t, int, int, int, off_t) =
		(void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");

	if (fd >= 0 && fd == fake_fd) {
		int mem = prot & PROT_WRITE ? -1 : fake_map(len, &off);

		if (mem < 0) {
			errno = EINVAL;
			return MAP_FAILED;
		}
		/* A read-only mapping of the same pages, as the driver gives. */
		return real(addr, len, PROT_READ, MAP_SHARED, mem, off);
	}
	return real(addr, len, prot, flags, fd, off);
}
#endif

#endif /* IPT_FAKE_IPT_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * ipt: mmap of /dev/ipt - each trace's buffer, read-only, at its
 * mmap_offset.  See Documentation/design.rst (mmap lifetime).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>

#include "ipt_session.h"

/*
 * The file a mapping refers to.  Each mapping gets its own anonymous file
 * instead of /dev/ipt's: closing /dev/ipt then ends the session even while
 * buffers are mapped, and this file's owner reference keeps ipt.ko loaded
 * until the last mapping is gone (remove_vma() calls ->close before it
 * drops the file, mm/mmap.c:137-142).
 */
static const struct file_operations ipt_map_fops = {
	.owner = THIS_MODULE,
	.llseek = noop_llseek,
};

/*
 * Each mapping holds a reference to its buffer (vm_private_data), so the
 * buffer, its pages and its locked-memory charge live until the last
 * mapping is gone, whatever happens to the session: configure, mmap,
 * release in a loop cannot pin more than the charge allows.  ->open runs
 * for every copy of a mapping (fork, split, mremap), ->close for every
 * one that goes.
 */
static void ipt_vm_open(struct vm_area_struct *vma)
{
	ipt_buffer_get(vma->vm_private_data);
}

static void ipt_vm_close(struct vm_area_struct *vma)
{
	ipt_buffer_put(vma->vm_private_data);
}

static const struct vm_operations_struct ipt_vm_ops = {
	.open = ipt_vm_open,
	.close = ipt_vm_close,
};

/**
 * ipt_session_mmap() - map (part of) one trace's buffer, read-only
 * @s: the session
 * @vma: the mapping; its offset selects the buffer (mmap_offset)
 *
 * The mapping holds a reference to the buffer (and so its charge) until
 * it is unmapped.
 *
 * Context: mmap_lock held for writing; takes the device lock.
 * Return: 0; -EPERM for a writable mapping; -EINVAL when the session has
 * no buffers or the range is not inside one buffer; -ENOMEM or another
 * error from mapping the pages.
 */
int ipt_session_mmap(struct ipt_session *s, struct vm_area_struct *vma)
{
	unsigned long pgoff = vma->vm_pgoff, npages = vma_pages(vma), i;
	struct ipt_trace *t = NULL;
	struct file *file;
	int ret = 0;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;

	mutex_lock(&s->idev->lock);
	for (i = 0; s->state != IPT_STATE_IDLE && i < s->nr_traces; i++) {
		struct ipt_trace *c = &s->traces[i];
		unsigned long first = c->mmap_offset >> PAGE_SHIFT;
		unsigned long pages = c->buf->size >> PAGE_SHIFT;

		if (pgoff >= first && pgoff - first < pages) {
			if (npages <= pages - (pgoff - first))
				t = c;
			break;
		}
	}
	if (!t) {
		ret = -EINVAL;
		goto out_unlock;
	}
	file = anon_inode_getfile("[ipt-trace]", &ipt_map_fops, NULL, O_RDONLY);
	if (IS_ERR(file)) {
		ret = PTR_ERR(file);
		goto out_unlock;
	}
	vma->vm_flags &= ~VM_MAYWRITE;
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	for (i = 0; i < npages; i++) {
		u64 off = ((u64)(pgoff + i) << PAGE_SHIFT) - t->mmap_offset;

		ret = vm_insert_page(vma, vma->vm_start + (i << PAGE_SHIFT),
				     ipt_buffer_page(t->buf, off));
		if (ret)
			break;
	}
	if (!ret) {
		vma_set_file(vma, file);
		vma->vm_private_data = ipt_buffer_get(t->buf);
		vma->vm_ops = &ipt_vm_ops;
	}
	fput(file);
out_unlock:
	mutex_unlock(&s->idev->lock);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * scripts/vm self-test: reads freed memory when loaded.
 * Only a KASAN kernel notices ("BUG: KASAN: use-after-free"); on other
 * kernels the read silently returns stale data.
 */
#include <linux/compiler.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/slab.h>

static int __init vmst_uaf_init(void)
{
	int *p = kmalloc(sizeof(*p), GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	*p = 42;
	kfree(p);
	pr_info("vmst_uaf: read %d\n", READ_ONCE(*p));	/* the deliberate bug */
	return 0;
}

static void __exit vmst_uaf_exit(void)
{
}

module_init(vmst_uaf_init);
module_exit(vmst_uaf_exit);
MODULE_DESCRIPTION("scripts/vm self-test: use after free at load");
MODULE_LICENSE("GPL");

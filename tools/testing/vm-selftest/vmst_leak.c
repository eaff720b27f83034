// SPDX-License-Identifier: GPL-2.0
/*
 * scripts/vm self-test: leaks a small allocation when loaded.
 * Only a kmemleak kernel notices ("unreferenced object", after
 * scripts/vm --kmemleak has scanned).
 */
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/slab.h>

static int __init vmst_leak_init(void)
{
	/* the deliberate bug: the only reference is dropped */
	pr_info("vmst_leak: leaked %p\n", kmalloc(64, GFP_KERNEL));
	return 0;
}

static void __exit vmst_leak_exit(void)
{
}

module_init(vmst_leak_init);
module_exit(vmst_leak_exit);
MODULE_DESCRIPTION("scripts/vm self-test: memory leak at load");
MODULE_LICENSE("GPL");

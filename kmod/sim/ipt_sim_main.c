// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: a simulated Intel PT unit behind ipt.ko's backend interface.
 *
 * Loading this module registers it with ipt.ko (ipt_hw_register()), which
 * then drives it as it would drive the CPU's own unit; unloading it gives
 * ipt.ko back the native probe.  This file holds the module parameters and
 * puts the parts together: the per-CPU units (ipt_sim_pcpu.c), the
 * programs they run (ipt_sim_prog.c), the perf-like foreign tracer
 * (ipt_sim_perf.c) and debugfs (ipt_sim_debugfs.c).
 * The unit's rules are in ipt_sim_models.c, ipt_sim_msr.c,
 * ipt_sim_trace.c, ipt_sim_output.c and ipt_sim_packets.c.  See
 * Documentation/simulator.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bits.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sizes.h>

#include "ipt_sim_module.h"

static char *model = "icl";
module_param(model, charp, 0444);
MODULE_PARM_DESC(model, "CPU model: icl, icl-noxsaves, skl, glm, icx, adl, bdw, bdw-sro");

static unsigned long rate = SZ_1M;
module_param(rate, ulong, 0444);
MODULE_PARM_DESC(rate, "trace bytes per second per tracing CPU (initial; debugfs 'rate' changes it)");

module_param_named(bulk, ipt_sim_bulk, bool, 0444);
MODULE_PARM_DESC(bulk, "bulk mode: the built-in loop's packets written in large units, rate up to 256 MiB/s (initial; debugfs 'bulk' changes it)");

unsigned int ipt_sim_period_us = 1000;
module_param_named(period_us, ipt_sim_period_us, uint, 0444);
MODULE_PARM_DESC(period_us, "output timer period in microseconds (100..100000)");

static uint xsave_pt_size;
module_param(xsave_pt_size, uint, 0444);
MODULE_PARM_DESC(xsave_pt_size, "CPUID.(0DH,8):EAX, the XSAVES PT component's size, on models with XSAVES-PT: a multiple of 8 in 72..4096 (0: the model's, 128)");

static bool pti;
module_param(pti, bool, 0444);
MODULE_PARM_DESC(pti, "the simulated kernel uses page-table isolation: user mode runs on CR3 | bit 12");

static bool pcid;
module_param(pcid, bool, 0444);
MODULE_PARM_DESC(pcid, "the simulated kernel puts PCIDs in CR3 (with pti: user CR3 | bit 11)");

static bool e_topa_single;
module_param(e_topa_single, bool, 0444);
MODULE_PARM_DESC(e_topa_single, "hybrid models: the efficiency cores' ToPA tables hold one output entry (CPUID.(14H,0):ECX[1] = 0)");

unsigned long ipt_sim_feed_size = SZ_1M;
module_param_named(feed_size, ipt_sim_feed_size, ulong, 0444);
MODULE_PARM_DESC(feed_size, "bytes of feed buffer per CPU (4096..64 MiB)");

#define IPT_SIM_FEED_MAX	(64UL * SZ_1M)

const struct ipt_sim_model *ipt_sim_model;
/* The selected model, with the parameters that vary it applied. */
static struct ipt_sim_model ipt_sim_model_buf;
/* Its efficiency cores, on a hybrid model. */
static struct ipt_sim_model ipt_sim_model_e_buf;

/**
 * ipt_sim_model_of() - the model a CPU presents
 * @cpu: the CPU
 *
 * The selected model; on a hybrid one, odd-numbered CPUs are efficiency
 * cores with their own CPUID.(14H,1) (and the unit's rules that follow
 * from it).
 *
 * Context: any, once the module is loaded.
 * Return: the model.
 */
const struct ipt_sim_model *ipt_sim_model_of(unsigned int cpu)
{
	return ipt_sim_model->hybrid && (cpu & 1) ? &ipt_sim_model_e_buf :
						    ipt_sim_model;
}

/* Context: no hook registered any more, no CPU tracing. */
static void ipt_sim_free(void)
{
	ipt_sim_pcpu_free();
	ipt_sim_prog_free_tasks();
}

static int __init ipt_sim_init(void)
{
	int ret;

	ipt_sim_model = ipt_sim_model_by_name(model);
	if (!ipt_sim_model) {
		pr_err("unknown model '%s' (see Documentation/simulator.rst)\n",
		       model);
		return -EINVAL;
	}
	ipt_sim_model_buf = *ipt_sim_model;
	/*
	 * The unit always stores the nine fields, 72 bytes: a smaller
	 * component would be reported by CPUID and overrun by XSAVES.
	 */
	if (xsave_pt_size && !ipt_sim_model_buf.xsaves_pt) {
		pr_warn("model %s has no XSAVES-PT: xsave_pt_size ignored\n",
			ipt_sim_model_buf.name);
	} else if (xsave_pt_size) {
		if (xsave_pt_size < IPT_XSAVE_PT_MIN_SIZE ||
		    xsave_pt_size > SZ_4K || xsave_pt_size % 8) {
			pr_err("xsave_pt_size must be a multiple of 8 in %u..%u\n",
			       IPT_XSAVE_PT_MIN_SIZE, SZ_4K);
			return -EINVAL;
		}
		ipt_sim_model_buf.xsave_pt_size = xsave_pt_size;
	}
	ipt_sim_model_buf.pti = pti;
	ipt_sim_model_buf.pcid = pcid;
	ipt_sim_model = &ipt_sim_model_buf;
	ipt_sim_model_e_buf = ipt_sim_model_buf;
	ipt_sim_model_e_buf.leaf_14_1 = ipt_sim_model_buf.leaf_14_1_e;
	if (e_topa_single && !ipt_sim_model_buf.hybrid)
		pr_warn("model %s is not hybrid: e_topa_single ignored\n",
			ipt_sim_model_buf.name);
	else if (e_topa_single)
		ipt_sim_model_e_buf.leaf_14_0.ecx &= ~BIT(1);
	if (rate > ipt_sim_rate_max() || ipt_sim_period_us < 100 ||
	    ipt_sim_period_us > 100000 || ipt_sim_feed_size < SZ_4K ||
	    ipt_sim_feed_size > IPT_SIM_FEED_MAX) {
		pr_err("rate, period_us or feed_size out of range\n");
		return -EINVAL;
	}
	ipt_sim_rate = rate;

	ret = ipt_sim_pcpu_init();
	if (ret)
		return ret;
	ret = ipt_sim_prog_init();
	if (ret)
		goto err_free;
	ret = ipt_sim_perf_init();
	if (ret)
		goto err_prog;
	ipt_sim_debugfs_init();
	ipt_sim_life_init();

	ret = ipt_hw_register(&ipt_sim_ops);
	if (ret) {
		pr_err("cannot register with ipt: %d\n", ret);
		goto err_debugfs;
	}
	pr_info("simulated PT unit: %s (%s)\n", ipt_sim_model->name,
		ipt_sim_model->desc);
	return 0;

err_debugfs:
	ipt_sim_life_exit();
	ipt_sim_debugfs_exit();
	ipt_sim_perf_exit();
err_prog:
	ipt_sim_prog_exit();
err_free:
	ipt_sim_free();
	return ret;
}

static void __exit ipt_sim_exit(void)
{
	ipt_hw_unregister(&ipt_sim_ops);
	ipt_sim_life_exit();
	ipt_sim_debugfs_exit();
	ipt_sim_perf_nmi_set(false);
	ipt_sim_perf_exit();
	ipt_sim_prog_exit();
	ipt_sim_free();
}

module_init(ipt_sim_init);
module_exit(ipt_sim_exit);

MODULE_DESCRIPTION("Simulated Intel PT unit for ipt");
MODULE_AUTHOR("The ipt developers");
MODULE_LICENSE("GPL");

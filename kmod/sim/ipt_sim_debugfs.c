// SPDX-License-Identifier: GPL-2.0
/*
 * ipt_sim: /sys/kernel/debug/ipt_sim, the simulator's knobs.  Fault
 * injection and inspection live only here, never in ipt.ko's ABI: each
 * CPU's counters and registers, operational errors, dropped bytes, a
 * foreign owner of the unit, a reset, the output rate and bulk mode, a
 * paced program, the perf-like NMI handler and perf's counter overflow
 * (ipt_sim_nmi.c);
 * the model and the built-in workload; and the feed files of
 * ipt_sim_prog.c.  See "debugfs" in Documentation/simulator.rst.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/smp.h>
#include <linux/spinlock.h>

#include "ipt_sim_module.h"

static struct dentry *ipt_sim_dir;

static int ipt_sim_stats_show(struct seq_file *m, void *v)
{
	struct ipt_sim_pcpu *pc = m->private;
	struct ipt_sim_cpu st;
	unsigned long flags;
	unsigned int i;

	raw_spin_lock_irqsave(&pc->lock, flags);
	st = pc->st;
	raw_spin_unlock_irqrestore(&pc->lock, flags);

	seq_printf(m, "rdmsr %llu\nwrmsr %llu\ngp %llu\nop_errors %llu\n",
		   st.stats.rdmsr, st.stats.wrmsr, st.stats.gp,
		   st.stats.op_errors);
	seq_printf(m, "pmis %llu\npmis_lost %llu\nbytes %llu\ndropped %llu\n",
		   st.stats.pmis, st.stats.pmis_lost, st.stats.bytes,
		   st.stats.dropped);
	seq_printf(m, "pmis_masked %llu\nperf_topa %llu\nlvt_early %llu\nlvt_masked %u\n",
		   st.stats.pmis_masked, st.stats.perf_topa,
		   st.stats.lvt_early, st.lvt_masked);
	seq_printf(m, "ovf %llu\npsb %llu\nxsaves %llu\nxsaves_empty %llu\nxrstors %llu\n",
		   st.stats.ovf, st.stats.psb, st.stats.xsaves,
		   st.stats.xsaves_empty, st.stats.xrstors);
	seq_printf(m, "clobbered %llu\nswitches %llu\nforeign %u\n",
		   st.stats.clobbered, st.stats.switches, st.foreign);
	seq_printf(m, "stuck %u\nstops_ignored %llu\nsleeps %llu\nlost_live %llu\n",
		   st.stuck, st.stats.stops_ignored, st.stats.sleeps,
		   st.stats.lost_live);
	seq_printf(m, "vmx_on %u\nvmxon_cleared %llu\n", st.vmx_on,
		   st.stats.vmxon_cleared);
	seq_printf(m, "stopped %llu\ncsum %llu\npace %u\npaced %llu\nbulk %llu\n",
		   st.stats.stopped, st.stats.csum, st.pace, st.stats.paced,
		   st.stats.bulk);
	seq_printf(m, "lost_before %llu\ngp_ctl %u\n", st.lost_before,
		   st.gp_ctl);
	seq_printf(m, "ctl %#llx\nstatus %#llx\noutput_base %#llx\noutput_mask %#llx\n",
		   st.ctl, st.status, st.output_base, st.output_mask | 0x7f);
	seq_printf(m, "cr3_match %#llx\nglobal_status %#llx\nxss %#llx\n",
		   st.cr3_match, st.global_status, st.xss);
	for (i = 0; i < 4; i++)
		seq_printf(m, "addr%u %#llx %#llx\n", i, st.addr_a[i],
			   st.addr_b[i]);
	seq_printf(m, "ip %#llx\nfeed %s %zu/%zu\ndrop %llu\n", st.ip,
		   st.feed.buf ? "on" : "off", st.feed.pos, st.feed.len,
		   st.drop);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipt_sim_stats);

/**
 * ipt_sim_knob_set() - carry out a write of a CPU's debugfs knob
 * @data: the CPU's unit (struct ipt_sim_pcpu), the file's private data
 * @val: the value written
 * @rule: what the write does to the unit; runs under its lock
 *
 * Context: process context (a debugfs write); takes @data's lock with
 * interrupts off around @rule, which therefore must not sleep.
 * Return: what @rule returned.
 */
int ipt_sim_knob_set(void *data, u64 val,
		     int (*rule)(struct ipt_sim_pcpu *pc, u64 val))
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;
	int ret;

	raw_spin_lock_irqsave(&pc->lock, flags);
	ret = rule(pc, val);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return ret;
}

/**
 * ipt_sim_knob_get() - read a CPU's debugfs knob
 * @data: the CPU's unit (struct ipt_sim_pcpu), the file's private data
 * @val: where the value goes
 * @rule: reads it from the unit, under its lock; NULL for a knob that is
 *        only written
 *
 * Context: process context (a debugfs read); takes @data's lock with
 * interrupts off around @rule, which therefore must not sleep.
 * Return: 0, or -EACCES without @rule (as debugfs for a NULL get).
 */
int ipt_sim_knob_get(void *data, u64 *val,
		     u64 (*rule)(const struct ipt_sim_pcpu *pc))
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;

	if (!rule)
		return -EACCES;
	raw_spin_lock_irqsave(&pc->lock, flags);
	*val = rule(pc);
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return 0;
}

static int ipt_sim_force_error_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	if (val)
		ipt_sim_force_error(&pc->st);
	return 0;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_force_error_fops, NULL,
			      ipt_sim_force_error_rule);

static int ipt_sim_drop_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	pc->st.drop = val;
	return 0;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_drop_fops, NULL, ipt_sim_drop_rule);

/*
 * Another tracer takes (1) or gives back (0) the unit: TraceEn set with
 * no output of ours, so that every write but one clearing TraceEn faults.
 */
static int ipt_sim_foreign_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	if (val && (pc->st.ctl & RTIT_CTL_TRACEEN))
		return -EBUSY;
	if (val) {
		pc->st.ctl = RTIT_CTL_TRACEEN | RTIT_CTL_TOPA |
			     RTIT_CTL_USR | RTIT_CTL_BRANCH_EN;
		pc->st.foreign = true;
	} else if (pc->st.foreign) {
		pc->st.ctl = 0;
		pc->st.foreign = false;
	}
	return 0;
}

static u64 ipt_sim_foreign_read(const struct ipt_sim_pcpu *pc)
{
	return pc->st.foreign;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_foreign_fops, ipt_sim_foreign_read,
			      ipt_sim_foreign_rule);

/*
 * Clear IA32_XSS bit 8 now, whatever the unit does, as KVM's VM exit
 * (kvm_load_host_xsave_state()) or a resume (fpu__resume_cpu()) rewrites
 * it with the kernel's value: the next XSAVES saves nothing of PT and
 * leaves TraceEn set.  Like them, with a WRMSR: checked and counted.
 */
static int ipt_sim_clear_xss_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	if (!val)
		return 0;
	return ipt_sim_wrmsr(&pc->st, MSR_IA32_XSS,
			     pc->st.xss & ~XFEATURE_MASK_PT);
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_clear_xss_fops, NULL,
			      ipt_sim_clear_xss_rule);

static void ipt_sim_pmc_overflow_on_cpu(void *data)
{
	struct ipt_sim_pcpu *pc = data;

	raw_spin_lock(&pc->lock);
	ipt_sim_pmc_overflow(pc);
	raw_spin_unlock(&pc->lock);
}

/* perf's counter PMC0 overflows on this CPU: GLOBAL_STATUS bit 0, a PMI. */
static int ipt_sim_pmc_overflow_set(void *data, u64 val)
{
	struct ipt_sim_pcpu *pc = data;

	if (!val)
		return 0;
	return smp_call_function_single(pc->cpu, ipt_sim_pmc_overflow_on_cpu,
					pc, 1);
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_pmc_overflow_fops, NULL,
			 ipt_sim_pmc_overflow_set, "%llu\n");

/*
 * Mask LVTPC now, as a PMI that another consumer took and did not re-arm
 * would leave it: the next PMIs are lost until someone unmasks it.
 */
static int ipt_sim_lvt_mask_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	pc->st.lvt_masked = val;
	return 0;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_lvt_mask_fops, NULL,
			      ipt_sim_lvt_mask_rule);

/* The perf-like NMI handler: 1 registers it (at the chain's tail). */
static int ipt_sim_perf_nmi_dfs_get(void *data, u64 *val)
{
	*val = ipt_sim_perf_nmi_get();
	return 0;
}

static int ipt_sim_perf_nmi_dfs_set(void *data, u64 val)
{
	ipt_sim_perf_nmi_set(val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_perf_nmi_fops, ipt_sim_perf_nmi_dfs_get,
			 ipt_sim_perf_nmi_dfs_set, "%llu\n");

/* Reset the unit to its power-on state; refused while TraceEn = 1. */
static int ipt_sim_reset_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	if (pc->st.ctl & RTIT_CTL_TRACEEN)
		return -EBUSY;
	ipt_sim_cpu_init(&pc->st, ipt_sim_model_of(pc->cpu));
	return 0;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_reset_fops, NULL, ipt_sim_reset_rule);

/*
 * Fault injection: the next write of IA32_RTIT_CTL that clears TraceEn
 * (bit 0) or sets it (bit 1) is #GP, once each; with bit 2, the next one
 * made in hard-interrupt context (a cross-CPU call), so that a context
 * switch on that CPU in between does not take it.
 */
static int ipt_sim_gp_ctl_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	if (val & ~(u64)(IPT_SIM_GP_CTL_CLEAR | IPT_SIM_GP_CTL_SET |
			 IPT_SIM_GP_CTL_IRQ))
		return -EINVAL;
	pc->st.gp_ctl = val;
	return 0;
}

static u64 ipt_sim_gp_ctl_read(const struct ipt_sim_pcpu *pc)
{
	return pc->st.gp_ctl;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_gp_ctl_fops, ipt_sim_gp_ctl_read,
			      ipt_sim_gp_ctl_rule);

/*
 * The bytes the unit's internal buffer holds back from memory while
 * TraceEn = 1 (struct ipt_sim_hold); what it held goes to memory first.
 */
static int ipt_sim_hold_rule(struct ipt_sim_pcpu *pc, u64 val)
{
	if (val > IPT_SIM_HOLD_MAX)
		return -EINVAL;
	ipt_sim_hold_flush(&pc->st);
	pc->st.hold->limit = val;
	return 0;
}

static u64 ipt_sim_hold_read(const struct ipt_sim_pcpu *pc)
{
	return pc->st.hold->limit;
}
DEFINE_IPT_SIM_KNOB_ATTRIBUTE(ipt_sim_hold_fops, ipt_sim_hold_read,
			      ipt_sim_hold_rule);

static int ipt_sim_rate_get(void *data, u64 *val)
{
	*val = READ_ONCE(ipt_sim_rate);
	return 0;
}

static int ipt_sim_rate_set(void *data, u64 val)
{
	if (val > ipt_sim_rate_max())
		return -EINVAL;
	WRITE_ONCE(ipt_sim_rate, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_rate_fops, ipt_sim_rate_get,
			 ipt_sim_rate_set, "%llu\n");

/*
 * Bulk mode (1): the built-in loop's packets are written in large units,
 * up to IPT_SIM_BULK_RATE_MAX; 0: a packet at a time (the default).
 */
static int ipt_sim_bulk_get(void *data, u64 *val)
{
	*val = READ_ONCE(ipt_sim_bulk);
	return 0;
}

static int ipt_sim_bulk_set(void *data, u64 val)
{
	if (val > 1)
		return -EINVAL;
	WRITE_ONCE(ipt_sim_bulk, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_bulk_fops, ipt_sim_bulk_get,
			 ipt_sim_bulk_set, "%llu\n");

/* One CPU's rate (0: the global one), so that it outruns its consumer. */
static int ipt_sim_cpu_rate_get(void *data, u64 *val)
{
	struct ipt_sim_pcpu *pc = data;

	*val = READ_ONCE(pc->rate);
	return 0;
}

static int ipt_sim_cpu_rate_set(void *data, u64 val)
{
	struct ipt_sim_pcpu *pc = data;

	if (val > ipt_sim_rate_max())
		return -EINVAL;
	WRITE_ONCE(pc->rate, val);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_cpu_rate_fops, ipt_sim_cpu_rate_get,
			 ipt_sim_cpu_rate_set, "%llu\n");

/*
 * The program is paced by its consumer (1): it blocks rather than run
 * into a ToPA STOP entry (ipt_sim_run()); 0: it runs on, as by default.
 */
static int ipt_sim_pace_get(void *data, u64 *val)
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;

	raw_spin_lock_irqsave(&pc->lock, flags);
	*val = pc->st.pace;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return 0;
}

static int ipt_sim_pace_set(void *data, u64 val)
{
	struct ipt_sim_pcpu *pc = data;
	unsigned long flags;

	if (val > 1)
		return -EINVAL;
	raw_spin_lock_irqsave(&pc->lock, flags);
	pc->st.pace = val;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ipt_sim_pace_fops, ipt_sim_pace_get,
			 ipt_sim_pace_set, "%llu\n");

static int ipt_sim_model_show(struct seq_file *m, void *v)
{
	const struct ipt_sim_model *sm = ipt_sim_model;
	struct ipt_cpuid_regs r;

	ipt_sim_cpuid(sm, IPT_CPUID_SIGNATURE, 0, &r);
	seq_printf(m, "%s: %s\nsignature %#x\ncode_base %#llx\ncode_size %zu\n",
		   sm->name, sm->desc, r.eax, IPT_SIM_CODE_BASE,
		   ipt_sim_code_size);
	seq_printf(m, "code_cr3 %#llx\nuser_cr3 %#llx\npti %d\npcid %d\n",
		   IPT_SIM_CODE_CR3, ipt_sim_user_cr3(sm), sm->pti, sm->pcid);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ipt_sim_model);

static struct debugfs_blob_wrapper ipt_sim_code_blob;

/*
 * The knobs of each cpuN directory: DEFINE_DEBUGFS_ATTRIBUTE files, so
 * made with debugfs_create_file_unsafe() (their handlers take
 * debugfs_file_get() themselves); the data of each is the CPU's
 * struct ipt_sim_pcpu.
 */
static const struct {
	const char *name;
	umode_t mode;
	const struct file_operations *fops;
} ipt_sim_cpu_knobs[] = {
	{ "force_error",	0200, &ipt_sim_force_error_fops },
	{ "drop",		0200, &ipt_sim_drop_fops },
	{ "reset",		0200, &ipt_sim_reset_fops },
	{ "foreign",		0600, &ipt_sim_foreign_fops },
	{ "clear_xss",		0200, &ipt_sim_clear_xss_fops },
	{ "pmc0_ovf",		0200, &ipt_sim_pmc_overflow_fops },
	{ "lvt_mask",		0200, &ipt_sim_lvt_mask_fops },
	{ "rate",		0644, &ipt_sim_cpu_rate_fops },
	{ "pace",		0644, &ipt_sim_pace_fops },
	{ "gp_ctl",		0600, &ipt_sim_gp_ctl_fops },
	{ "hold",		0600, &ipt_sim_hold_fops },
};

/**
 * ipt_sim_debugfs_init() - create /sys/kernel/debug/ipt_sim
 *
 * One directory cpuN for each possible CPU's unit; debugfs errors are
 * not fatal, as for any debugfs user.
 *
 * Context: module init, after ipt_sim_pcpu_init().
 */
void ipt_sim_debugfs_init(void)
{
	unsigned int cpu, i;
	char name[16];

	ipt_sim_dir = debugfs_create_dir("ipt_sim", NULL);
	debugfs_create_file("model", 0444, ipt_sim_dir, NULL,
			    &ipt_sim_model_fops);
	ipt_sim_code_blob.data = (void *)ipt_sim_code;
	ipt_sim_code_blob.size = ipt_sim_code_size;
	debugfs_create_blob("code", 0444, ipt_sim_dir, &ipt_sim_code_blob);
	debugfs_create_file_unsafe("rate", 0644, ipt_sim_dir, NULL,
				   &ipt_sim_rate_fops);
	debugfs_create_file_unsafe("bulk", 0644, ipt_sim_dir, NULL,
				   &ipt_sim_bulk_fops);
	debugfs_create_u32("fail_alloc", 0644, ipt_sim_dir,
			   &ipt_sim_fail_alloc);
	debugfs_create_file("task_feed", 0600, ipt_sim_dir, NULL,
			    &ipt_sim_task_feed_fops);
	debugfs_create_file_unsafe("perf_nmi", 0644, ipt_sim_dir, NULL,
				   &ipt_sim_perf_nmi_fops);
	ipt_sim_gate_debugfs(ipt_sim_dir);
	for_each_possible_cpu(cpu) {
		struct ipt_sim_pcpu *pc = per_cpu_ptr(ipt_sim_pcpu, cpu);
		struct dentry *d;

		snprintf(name, sizeof(name), "cpu%u", cpu);
		d = debugfs_create_dir(name, ipt_sim_dir);
		debugfs_create_file("stats", 0444, d, pc, &ipt_sim_stats_fops);
		debugfs_create_file("feed", 0200, d, pc, &ipt_sim_feed_fops);
		for (i = 0; i < ARRAY_SIZE(ipt_sim_cpu_knobs); i++)
			debugfs_create_file_unsafe(ipt_sim_cpu_knobs[i].name,
						   ipt_sim_cpu_knobs[i].mode, d,
						   pc, ipt_sim_cpu_knobs[i].fops);
		ipt_sim_life_debugfs(d, pc);
		ipt_sim_perf_debugfs(d, pc);
	}
}

/**
 * ipt_sim_debugfs_exit() - remove /sys/kernel/debug/ipt_sim
 *
 * Returns once no file operation runs any more.
 *
 * Context: process context, after ipt_sim_debugfs_init().
 */
void ipt_sim_debugfs_exit(void)
{
	debugfs_remove_recursive(ipt_sim_dir);
}

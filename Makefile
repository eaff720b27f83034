# SPDX-License-Identifier: GPL-2.0
#
# ipt: Intel Processor Trace driver and tools.
#
#   make            build ipt.ko (kmod/ipt.ko), libiptcap, ipttool, kselftests,
#                   ptcheck (the libipt trace verifier the tests use)
#   make check      run every test layer (see Documentation/testing.rst)
#   make demo       the main job: boot the VM, load ipt, show what it sees
#   make lint       checkpatch --strict, sparse (C=2) and W=1 on kernel code
#   make setup      install the Debian packages the above need
#
# KDIR selects the kernel to build ipt.ko for: the running kernel's build
# tree when it has one, otherwise the newest installed Debian linux-headers.

SHELL := /bin/bash
TOP := $(CURDIR)
O := $(TOP)/build

STOCK_KVER := $(shell bash -c '. $(TOP)/scripts/common.sh; ipt_stock_kver')
RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
KDIR ?= $(if $(wildcard $(RUNNING_KDIR)/Makefile),$(RUNNING_KDIR),/usr/src/linux-headers-$(STOCK_KVER))

# The kernel source (for kselftest_harness.h), extracted on first use.
KSELFTEST_DIR ?= $(shell $(TOP)/scripts/linux-source)/tools/testing/selftests

all: modules userspace selftests

modules:
	$(MAKE) -C $(KDIR) M=$(TOP) modules

userspace:
	$(MAKE) -C userspace O=$(O)/userspace

selftests:
	$(MAKE) -C tools/testing/selftests/ipt O=$(O)/selftests KSELFTEST_DIR=$(KSELFTEST_DIR)
	$(MAKE) -C tools/testing/ptcheck O=$(O)/selftests
	$(MAKE) -C tools/testing/groundtruth O=$(O)/selftests
	$(MAKE) -C tools/testing/switch-bench O=$(O)/selftests

lint:
	scripts/lint

check:
	scripts/check

demo:
	scripts/demo

setup:
	scripts/setup

clean:
	-$(MAKE) -C $(KDIR) M=$(TOP) clean
	rm -rf $(O)

.PHONY: all modules userspace selftests lint check demo setup clean

# SPDX-License-Identifier: GPL-2.0
# The build of a libiptcap bench (capture-bench, stream-bench): its
# Makefile sets BENCH, the name of its directory, of its one source file
# BENCH.c and of the program, then includes this.
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))../..)
O ?= $(TOP)/build/$(BENCH)
LIB ?= $(TOP)/build/userspace/libiptcap.a
CC ?= cc
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -I$(TOP)/userspace/include -I$(TOP)/uapi

all: $(O)/$(BENCH)

$(O)/$(BENCH): $(BENCH).c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $(BENCH).c $(LIB)

.PHONY: all

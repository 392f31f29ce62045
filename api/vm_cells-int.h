/* vm_cells-int: the host kin's VMMs in cells (api/vm_cells.c), a vm_runner for
 * vm/'s manager. Internal to api/: the Vm service (api/vm.c) owns one when
 * kin has cells. */
#pragma once

#include "cells/cells.h"
#include "vm/vm.h"

#define API_VM_CELLS_PARENT "vms" /* a VM's cell: vms/NAME */
#define API_VM_CELLS_EXEC   "vmm" /* its executable */

struct api_vm_cells;
int api_vm_cells_new(struct ev_loop *loop, struct cells *cells, struct vm_manager *m,
                     struct api_vm_cells **ret);
/* The runner to give the manager (vm_manager_set_runner). */
void api_vm_cells_runner(struct api_vm_cells *vc, struct vm_runner *ret);
/* Limits for the next start only (NULL: none); kept by pointer until then. */
void api_vm_cells_set_limits(struct api_vm_cells *vc, const struct cell_limits *l);
/* Deletes the cell of an ended VMM (exit reports come from the loop, out
 * of the cells library's callbacks: their handlers may call this). */
void api_vm_cells_release(struct api_vm_cells *vc, const char *name);
/* After its VMs were taken over (how: "re-exec", "adopt"): every cell
 * vms/NAME the manager does not know is killed and removed, logged. */
void api_vm_cells_sweep(struct api_vm_cells *vc, const char *how);
/* Reports the ends already seen, then drops later ones (kin is stopping:
 * the cells go). */
void api_vm_cells_close(struct api_vm_cells *vc);
void api_vm_cells_free(struct api_vm_cells *vc);

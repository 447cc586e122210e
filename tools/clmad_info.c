/* clmad-info: lists every OpenCL device and marks the one clmad would use. */
#include <clmad.h>

#include <stdio.h>
#include <stdlib.h>

static const char *type_name(clmad_device_type t)
{
    switch (t) {
    case CLMAD_DEVICE_CPU: return "cpu";
    case CLMAD_DEVICE_GPU: return "gpu";
    case CLMAD_DEVICE_ACCELERATOR: return "accelerator";
    default: return "other";
    }
}

int main(void)
{
    clmad_device_info *list = NULL;
    size_t n = 0;
    clmad_status st = clmad_device_list(&list, &n);
    if (st != CLMAD_OK) {
        fprintf(stderr, "clmad-info: %s: %s\n", clmad_status_string(st), clmad_last_error(NULL));
        return 1;
    }
    const char *spec = getenv("CLMAD_DEVICE");
    size_t chosen = 0;
    clmad_status choice = n ? clmad_device_choose(list, n, spec, &chosen) : CLMAD_ERR_NO_DEVICE;

    printf("clmad %d.%d.%d: %zu OpenCL device%s\n", CLMAD_VERSION_MAJOR, CLMAD_VERSION_MINOR,
           CLMAD_VERSION_PATCH, n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++) {
        const clmad_device_info *d = &list[i];
        printf("%s %d:%d  %s\n", choice == CLMAD_OK && i == chosen ? "*" : " ", d->platform_index,
               d->device_index, d->name);
        printf("      platform: %s\n", d->platform_name);
        printf("      type: %s, vendor: %s\n", type_name(d->type), d->vendor);
        printf("      version: %s, driver: %s\n", d->version, d->driver_version);
        printf("      compute units: %u, max work-group: %zu\n", d->compute_units,
               d->max_work_group_size);
        printf("      global memory: %.1f MiB, max allocation: %.1f MiB\n",
               d->global_mem_bytes / 1048576.0, d->max_alloc_bytes / 1048576.0);
        printf("      fp64: %s\n", d->fp64 ? "yes" : "no");
    }
    if (choice == CLMAD_OK && spec && spec[0])
        printf("clmad would use %d:%d %s (CLMAD_DEVICE=%s)\n", list[chosen].platform_index,
               list[chosen].device_index, list[chosen].name, spec);
    else if (choice == CLMAD_OK)
        printf("clmad would use %d:%d %s (default: first GPU, else first device)\n",
               list[chosen].platform_index, list[chosen].device_index, list[chosen].name);
    else
        printf("clmad would use no device: %s\n", n ? clmad_last_error(NULL) : "none reported");
    clmad_device_list_free(list);
    return choice == CLMAD_OK ? 0 : 1;
}

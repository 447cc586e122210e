/* SPDX-License-Identifier: Apache-2.0 */
/* OpenCL C sources embedded at build time (see cmake/embed_sources.cmake). */
#ifndef CLMAD_EMBEDDED_H
#define CLMAD_EMBEDDED_H

typedef struct clmad_embedded_file {
    const char *name;  /* file name under cl/, e.g. "clmad_ad.clh" */
    const char *text;  /* NUL-terminated contents */
} clmad_embedded_file;

/* Terminated by an entry whose name is NULL. */
extern const clmad_embedded_file clmad_embedded_files[];

/* The contents of cl/<name>, or NULL if there is no such file. */
const char *clmad__embedded_source(const char *name);

#endif

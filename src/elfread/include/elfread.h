/*
 * ada elfread: the libelf readings both the agent (src/hook/symbols.c,
 * at start) and the readers (src/atf/symbols_debug.c, after a recording)
 * make of an image or its debug file. libelf only; no state, reentrant
 * on distinct Elf handles; nothing prints.
 */
#ifndef ADA_ELFREAD_H
#define ADA_ELFREAD_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* The first section of elf of type whose name is name (any name when
 * name is NULL); NULL when there is none or the names cannot be read. */
Elf_Scn *ada_elfread_section(Elf *elf, const char *name, Elf64_Word type);

/* The GNU build-id (the NT_GNU_BUILD_ID note named "GNU" of any SHT_NOTE
 * section) into id: its length in bytes, 0 when there is none or it is
 * longer than cap. */
size_t ada_elfread_build_id(Elf *elf, uint8_t *id, size_t cap);

#endif

/*
 * libelf readings shared by the agent and the readers (elfread.h).
 * Threads: any, one Elf handle per thread; no state.
 */
#include <string.h>

#include "elfread.h"

Elf_Scn *ada_elfread_section(Elf *elf, const char *name, Elf64_Word type)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *sn =
		    gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (sn && sh.sh_type == type && (!name || !strcmp(sn, name)))
			return scn;
	}
	return NULL;
}

size_t ada_elfread_build_id(Elf *elf, uint8_t *id, size_t cap)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || nh.n_descsz > cap ||
			    memcmp((char *)d->d_buf + name_off, "GNU", 4))
				continue;
			memcpy(id, (char *)d->d_buf + desc_off, nh.n_descsz);
			return nh.n_descsz;
		}
	}
	return 0;
}

/*
 * The agent's capstone holds the x86 disassembler only.
 *
 * Role: Debian's libcapstone.a, linked into libada_agent.so, brings every
 * architecture capstone knows: cs.o refers to each one's
 * <ARCH>_global_init and <ARCH>_option, and with them the linker takes
 * their disassemblers and tables, about 80 000 pointers the dynamic
 * loader relocates in every process the agent starts in (M68K's
 * instruction table alone is 1 MiB of them): page faults and copies
 * before the program's first instruction, at every exec. These
 * definitions, linked into the agent as objects ahead of the archive,
 * answer for every other architecture, so the linker leaves their
 * members out. The agent opens capstone for CS_ARCH_X86 only
 * (x86_prepare.c); cs_open() for any of these fails with CS_ERR_ARCH.
 * The ada executable links it too (tools/CMakeLists.txt): it opens
 * capstone for x86 only as well (ada diagnose --functions, ada attach),
 * and every ada record paid those relocations at its own start.
 *
 * Threads: none (never called but by cs_open/cs_option of another
 * architecture, which the agent never asks for).
 */
#include <stddef.h>

#include <capstone/capstone.h>

/* cs.o's prototypes take its private cs_struct: a pointer is all they
 * pass. */
#define ADA_CS_NOT_HERE(arch)                                                                      \
	cs_err arch##_global_init(void *ud);                                                       \
	cs_err arch##_option(void *handle, cs_opt_type type, size_t value);                        \
	cs_err arch##_global_init(void *ud)                                                        \
	{                                                                                          \
		(void)ud;                                                                          \
		return CS_ERR_ARCH;                                                                \
	}                                                                                          \
	cs_err arch##_option(void *handle, cs_opt_type type, size_t value)                         \
	{                                                                                          \
		(void)handle, (void)type, (void)value;                                             \
		return CS_ERR_ARCH;                                                                \
	}

ADA_CS_NOT_HERE(ARM)
ADA_CS_NOT_HERE(AArch64)
ADA_CS_NOT_HERE(Mips)
ADA_CS_NOT_HERE(PPC)
ADA_CS_NOT_HERE(Sparc)
ADA_CS_NOT_HERE(SystemZ)
ADA_CS_NOT_HERE(XCore)
ADA_CS_NOT_HERE(M68K)
ADA_CS_NOT_HERE(TMS320C64x)
ADA_CS_NOT_HERE(M680X)
ADA_CS_NOT_HERE(EVM)

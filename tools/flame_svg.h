/*
 * The interactive SVG of `ada flame` (tools/cmd_flame.c builds the call
 * tree, this file draws it): one <g> per frame with its title, rectangle
 * and label, laid out by inclusive time, with a small embedded script for
 * click-to-zoom and regular-expression search. Self-contained: no external
 * file, font or script.
 */
#ifndef ADA_TOOLS_FLAME_SVG_H
#define ADA_TOOLS_FLAME_SVG_H

#include <stdint.h>
#include <stdio.h>

struct flame_frame {
	const char *name;
	uint64_t x, w;  /* start and inclusive width, in ns from the left edge */
	uint64_t self;  /* ns */
	uint32_t depth; /* 0 = the root ("all") */
	int kind;       /* 0 a function, 1 a process or thread label */
};

struct flame_svg {
	FILE *f;
	const char *title, *subtitle;
	uint64_t total;     /* the root's width */
	uint32_t max_depth; /* deepest frame drawn */
};

void flame_svg_begin(struct flame_svg *s);
void flame_svg_frame(struct flame_svg *s, const struct flame_frame *fr);
void flame_svg_end(struct flame_svg *s);

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * A libFuzzer target for idgend's configuration file (config.c on
 * inifile.c): whatever the bytes, config_load_text() refuses them or
 * gives a configuration, never crashes or leaks; and a configuration it
 * gives, printed by config_print() (what --check-config shows), reads
 * back to the very same text.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* cfg as config_print() writes it, malloc'ed. */
static char *printed(const struct config *cfg, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		abort();
	config_print(cfg, f);
	if (fclose(f))
		abort();
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config cfg, again;
	char *text, *text2;
	size_t len, len2;

	if (config_load_text(&cfg, "fuzz", (const char *)data, size)) {
		config_free(&cfg);
		return 0;
	}
	text = printed(&cfg, &len);
	if (config_load_text(&again, "printed", text, len)) {
		fprintf(stderr, "the printed configuration is refused:\n%s", text);
		abort();
	}
	text2 = printed(&again, &len2);
	if (len != len2 || memcmp(text, text2, len)) {
		fprintf(stderr, "printed, read back and printed again, it "
			"differs:\n%s---\n%s", text, text2);
		abort();
	}
	free(text);
	free(text2);
	config_free(&cfg);
	config_free(&again);
	return 0;
}

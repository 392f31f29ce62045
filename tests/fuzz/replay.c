/* A plain main for a libFuzzer target: replays the files named on the
 * command line (corpus entries, crash reproducers) through the target. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		static uint8_t buf[1 << 22];
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
		printf("replayed %s (%zu bytes)\n", argv[i], n);
	}
	return 0;
}

// SPDX-License-Identifier: MIT
#include "testutil.h"
int main(void)
{
	Suite *s = suite_create("openvino");
	return tu_run(s);
}

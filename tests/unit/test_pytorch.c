// SPDX-License-Identifier: MIT
#include "testutil.h"
int main(void)
{
	return 0;
}

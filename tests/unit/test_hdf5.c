// SPDX-License-Identifier: MIT
#include "testutil.h"
START_TEST(placeholder)
{
}
END_TEST
int main(void)
{
	Suite *s = suite_create("hdf5");
	TCase *tc = tcase_create("all");
	tcase_add_test(tc, placeholder);
	suite_add_tcase(s, tc);
	return tu_run_with_fixtures(s);
}

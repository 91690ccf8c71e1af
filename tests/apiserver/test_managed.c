/* test_managed.c -- being written. */
int main(void) { return 0; }

/* test_informer.c -- being written. */
int main(void) { return 0; }

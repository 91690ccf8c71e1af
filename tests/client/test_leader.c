/* test_leader.c -- being written. */
int main(void) { return 0; }

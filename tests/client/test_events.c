/* test_events.c -- being written. */
int main(void) { return 0; }

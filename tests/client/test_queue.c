/* test_queue.c -- being written. */
int main(void) { return 0; }

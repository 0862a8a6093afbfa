#include "controller/cli/Cli.h"

int main(int argc, char** argv) {
  return reclaimd::controller::runCli(argc, argv);
}

// tempra/ag/ag.h: autograd in one include: grad mode and nodes (core), backward, gradcheck,
// custom VJPs and checkpointing.
#pragma once

#include "tempra/ag/backward.h"
#include "tempra/ag/custom_op.h"
#include "tempra/ag/gradcheck.h"
#include "tempra/core/grad_node.h"

// The #gpu.runtime_select end-to-end program (gpu/mlir/runtime_select.sh).
//
// @vadd copies two vectors to the device, adds them there and copies the sum
// back: c[i] = a[i] + b[i] for i < 1048579 (not a multiple of the block),
// on one stream, through the gpu dialect's async ops. Thread 0 also stores
// KDL_MARKER into m[0]: runtime_select.sh compiles the kernel once per
// object, KDL_MARKER replaced by a number naming the object (80: sm_80
// cubin, 90: sm_90 cubin, 91: sm_90a cubin, 8: sm_80 PTX), so that the host
// can say which entry of the container ran. Memrefs reach the kernel as bare
// pointers (every kernel argument is pointer-sized).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @vadd(%a: memref<1048579xf32>, %b: memref<1048579xf32>,
                   %c: memref<1048579xf32>, %m: memref<1xi32>) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %n = arith.constant 1048579 : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %x = memref.load %a[%i] : memref<1048579xf32>
        %y = memref.load %b[%i] : memref<1048579xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %c[%i] : memref<1048579xf32>
      }
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %i, %c0 : index
      scf.if %first {
        %mark = arith.constant KDL_MARKER : i32
        memref.store %mark, %m[%c0] : memref<1xi32>
      }
      gpu.return
    }
  }

  func.func @vadd(%a: memref<1048579xf32>, %b: memref<1048579xf32>,
                  %c: memref<1048579xf32>, %m: memref<1xi32>)
      attributes {llvm.emit_c_interface} {
    %one = arith.constant 1 : index
    %threads = arith.constant 256 : index
    %blocks = arith.constant 4097 : index
    %t0 = gpu.wait async
    %da, %t1 = gpu.alloc async [%t0] () : memref<1048579xf32>
    %db, %t2 = gpu.alloc async [%t1] () : memref<1048579xf32>
    %dc, %t3 = gpu.alloc async [%t2] () : memref<1048579xf32>
    %dm, %t4 = gpu.alloc async [%t3] () : memref<1xi32>
    %t5 = gpu.memcpy async [%t4] %da, %a : memref<1048579xf32>, memref<1048579xf32>
    %t6 = gpu.memcpy async [%t5] %db, %b : memref<1048579xf32>, memref<1048579xf32>
    %t7 = gpu.launch_func async [%t6] @kernels::@vadd
        blocks in (%blocks, %one, %one) threads in (%threads, %one, %one)
        args(%da : memref<1048579xf32>, %db : memref<1048579xf32>,
             %dc : memref<1048579xf32>, %dm : memref<1xi32>)
    %t8 = gpu.memcpy async [%t7] %c, %dc : memref<1048579xf32>, memref<1048579xf32>
    %t9 = gpu.memcpy async [%t8] %m, %dm : memref<1xi32>, memref<1xi32>
    %t10 = gpu.dealloc async [%t9] %da : memref<1048579xf32>
    %t11 = gpu.dealloc async [%t10] %db : memref<1048579xf32>
    %t12 = gpu.dealloc async [%t11] %dc : memref<1048579xf32>
    %t13 = gpu.dealloc async [%t12] %dm : memref<1xi32>
    gpu.wait [%t13]
    return
  }
}
